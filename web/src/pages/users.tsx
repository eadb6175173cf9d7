// Users (administrators only): the accounts of the server, create one, edit one (name, email,
// administrator flag, verification, a new password), its roles (grant, revoke) and delete it.
import { Budgets } from "./usage";
import { useState } from "preact/hooks";
import { api, unwrap, type User } from "../api";
import { navigate } from "../router";
import { useSession } from "../session";
import { FormPanel } from "../crud";
import { Check, ErrorNote, Field, Link, PASSWORD_RULE, PageHeader, checkPassword, formatTime, useAction, useLoad } from "../ui";

export function UserList() {
  const users = useLoad(async () => (await unwrap(api.GET("/users", { params: { query: { per_page: 100 } } }))).data.users, []);
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [admin, setAdmin] = useState(false);
  return (
    <>
      <PageHeader title="Users" />
      <div class="split">
        <FormPanel
          title="New user"
          submit="Create user"
          onSubmit={async () => {
            checkPassword(password);
            await unwrap(api.POST("/users", { body: { email, password, display_name: name || undefined, is_admin: admin, email_verified: true } }));
            setEmail("");
            setName("");
            setPassword("");
            setAdmin(false);
            await users.reload();
          }}
        >
          <Field label="Email" type="email" required value={email} onValue={setEmail} />
          <Field label="Display name" value={name} onValue={setName} />
          <Field label="Initial password" type="password" autoComplete="new-password" required value={password} onValue={setPassword} hint={PASSWORD_RULE} />
          <Check label="Administrator" checked={admin} onChange={setAdmin} />
        </FormPanel>
        <section class="panel flush">
          <ErrorNote error={users.error} />
          <table class="table">
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Roles</th>
                <th scope="col" class="hide-narrow">
                  Created
                </th>
              </tr>
            </thead>
            <tbody>
              {(users.data ?? []).map((u) => (
                <tr key={u.id}>
                  <td>
                    <Link to={`/users/${u.id}`}>{u.display_name || u.email}</Link>
                    <small class="muted block">{u.email}</small>
                  </td>
                  <td>
                    {u.is_admin && <span class="badge tone-info">administrator</span>} {u.roles.filter((r) => r !== "admin").join(", ")}
                    {!u.email_verified && <span class="badge tone-warn">unverified</span>}
                  </td>
                  <td class="hide-narrow">{formatTime(u.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </div>
    </>
  );
}

export function UserPage(props: { id: string }) {
  const id = Number(props.id);
  const { user: me } = useSession();
  const user = useLoad(async () => (await unwrap(api.GET("/users/{id}", { params: { path: { id } } }))).data.user, [id]);
  const roles = useLoad(async () => (await unwrap(api.GET("/users/{id}/roles", { params: { path: { id } } }))).data.roles, [id]);
  return (
    <>
      <PageHeader title={user.data ? user.data.display_name || user.data.email : "User"} back={{ to: "/users", label: "Users" }} />
      <ErrorNote error={user.error} />
      {user.data && (
        <div class="split">
          <UserForm key={user.data.updated_at} user={user.data} onSaved={user.set} />
          <div>
            <section class="panel">
              <h2>Roles</h2>
              <ErrorNote error={roles.error} />
              <Roles id={id} roles={roles.data ?? []} onChange={(r) => (roles.set(r), void user.reload())} />
            </section>
            <Budgets kind="user" id={String(id)} title="Budgets of this user" />
            <DeleteUser user={user.data} self={me?.id === id} />
          </div>
        </div>
      )}
    </>
  );
}

function UserForm(props: { user: User; onSaved: (u: User) => void }) {
  const u = props.user;
  const [name, setName] = useState(u.display_name);
  const [email, setEmail] = useState(u.email);
  const [admin, setAdmin] = useState(u.is_admin);
  const [verified, setVerified] = useState(u.email_verified);
  const [password, setPassword] = useState("");
  return (
    <FormPanel
      title="Account"
      submit="Save user"
      saved="Saved."
      onSubmit={async () => {
        const r = await unwrap(api.PATCH("/users/{id}", { params: { path: { id: u.id } }, body: { display_name: name, email, is_admin: admin, email_verified: verified, password: password || undefined } }));
        setPassword("");
        props.onSaved(r.data.user);
      }}
    >
      <Field label="Display name" value={name} onValue={setName} />
      <Field label="Email" type="email" required value={email} onValue={setEmail} />
      <Check label="Administrator" checked={admin} onChange={setAdmin} />
      <Check label="Email verified" checked={verified} onChange={setVerified} />
      <Field label="New password (optional)" type="password" autoComplete="new-password" value={password} onValue={setPassword} />
    </FormPanel>
  );
}

function Roles(props: { id: number; roles: string[]; onChange: (r: string[]) => void }) {
  const [role, setRole] = useState("");
  const act = useAction();
  return (
    <>
      {props.roles.length === 0 && <p class="muted">No roles.</p>}
      <ul class="plain">
        {props.roles.map((r) => (
          <li key={r}>
            <span class="chip">{r}</span>
            <button type="button" class="small danger" aria-label={`Revoke ${r}`} disabled={act.pending} onClick={() => act.run(async () => props.onChange((await unwrap(api.DELETE("/users/{id}/roles/{role}", { params: { path: { id: props.id, role: r } } }))).data.roles))}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            props.onChange((await unwrap(api.POST("/users/{id}/roles", { params: { path: { id: props.id } }, body: { role } }))).data.roles);
            setRole("");
          });
        }}
      >
        <Field label="Role to grant" required value={role} onValue={setRole} hint="“admin” makes the user an administrator." />
        <button disabled={act.pending}>Grant</button>
      </form>
      <ErrorNote error={act.error} />
    </>
  );
}

function DeleteUser(props: { user: User; self: boolean }) {
  const act = useAction();
  return (
    <section class="panel danger-zone">
      <h2>Delete the account</h2>
      <p class="muted small">{props.self ? "This is your own account." : "Their agents, chats and keys go with it."}</p>
      <ErrorNote error={act.error} />
      <button
        type="button"
        class="danger"
        disabled={act.pending}
        onClick={() => {
          if (!confirm(`Delete ${props.user.email}?`)) return;
          void act.run(async () => {
            await unwrap(api.DELETE("/users/{id}", { params: { path: { id: props.user.id } } }));
            navigate("/users");
          });
        }}
      >
        Delete user
      </button>
    </section>
  );
}
