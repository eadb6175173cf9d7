// The shell: loads the session, routes client paths to pages, and keeps signed-out visitors
// on the public pages (sign in, register, the mailed links).
import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, unwrap, whenUnauthenticated } from "./api";
import { forgetPush } from "./live";
import { startClientWorker, stopClientWorker } from "./worker";
import { currentPath, match, navigate, useRoute } from "./router";
import { loadSession, signedOut, updateUser, useSession } from "./session";
import { ErrorNote, Field, Link, Notice, PASSWORD_RULE, PageHeader, checkPassword, useAction } from "./ui";
import { ConfirmLink, ForgotPassword, Login, Register, ResetPassword } from "./pages/auth";
import { AgentList, NewAgent } from "./pages/agents";
import { AgentPage } from "./pages/agent";
import { TaskList, TaskPage } from "./pages/tasks";
import { GroupList, GroupPage } from "./pages/groups";
import { UserList, UserPage } from "./pages/users";
import { Bell, NotificationsPage } from "./pages/notifications";
import { ApprovalsLink, ApprovalsPage } from "./pages/approvals";
import { UsagePage } from "./pages/usage";
import { PluginsPage, SettingsPage } from "./pages/admin";
import { PluginApp } from "./pages/pluginapp";
import { Palette } from "./palette";
import { Locations, ProfilePanel } from "./pages/profile";
import { ImportTemplate, MediaPage } from "./pages/agentextra";

const publicPaths = ["/login", "/register", "/forgot-password", "/reset-password", "/confirm-email", "/verify"];
const isPublic = (p: string) => publicPaths.some((x) => p === x || p.startsWith(x + "/"));

whenUnauthenticated(() => {
  signedOut();
  if (!isPublic(currentPath())) navigate(`/login?next=${encodeURIComponent(currentPath())}`, true);
});

function Shell(props: { children: preact.ComponentChildren }) {
  const { user, config } = useSession();
  // In client-worker mode the signed-in browser runs its user's tasks.
  useEffect(() => {
    if (config?.worker_runtime_mode !== "client") return;
    startClientWorker();
    return stopClientWorker;
  }, [config?.worker_runtime_mode, user?.id]);
  const { path } = useRoute();
  const [menu, setMenu] = useState(false);
  const logout = useAction();
  const nav = [
    { to: "/agents", label: "Agents" },
    { to: "/tasks", label: "Chats" },
    { to: "/groups", label: "Groups" },
    { to: "/usage", label: "Usage" },
    { to: "/media", label: "Media" },
    { to: "/plugins", label: "Plugins" },
    ...(user?.is_admin
      ? [
          { to: "/users", label: "Users" },
          { to: "/settings", label: "Server" },
        ]
      : []),
  ];
  useEffect(() => setMenu(false), [path]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link to="/agents" class="brand">
          <span class="logo" aria-hidden="true">
            ◆
          </span>{" "}
          svc console
        </Link>
        <Bell />
        <button type="button" class="menu-toggle" aria-expanded={menu} aria-controls="main-nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav id="main-nav" class={menu ? "open" : ""} aria-label="Main">
          {nav.map((n) => (
            <Fragment key={n.to}>
              <Link to={n.to} class="navlink" aria-current={path.startsWith(n.to) ? "page" : undefined}>
                {n.label}
              </Link>
              {n.to === "/tasks" && <ApprovalsLink current={path.startsWith("/approvals")} />}
            </Fragment>
          ))}
          <Palette />
          {config?.worker_runtime_mode === "client" && (
            <span class="chip worker" title="Client-worker mode: this browser runs your chats while it is open">
              worker
            </span>
          )}
          <Link to="/account" class="navlink who" title={`${user?.email ?? ""}: your account`} aria-current={path.startsWith("/account") ? "page" : undefined}>
            <span class="sr-only">Account: </span>
            {user?.display_name || user?.email}
            {user?.is_admin && <span class="chip">admin</span>}
          </Link>
          <button
            type="button"
            class="ghost"
            disabled={logout.pending}
            onClick={() =>
              logout.run(async () => {
                await unwrap(api.POST("/auth/logout"));
                forgetPush();
                signedOut();
                navigate("/login?signed_out=1", true);
              })
            }
          >
            Log out
          </button>
        </nav>
      </header>
      <ErrorNote error={logout.error} />
      <main id="main">{props.children}</main>
    </>
  );
}

function Account() {
  const { user } = useSession();
  const [name, setName] = useState(user?.display_name ?? "");
  const [cur, setCur] = useState("");
  const [next, setNext] = useState("");
  const [saved, setSaved] = useState("");
  const save = useAction();
  const pw = useAction();
  return (
    <>
      <PageHeader title="Account" />
      <div class="split">
        <form
          class="panel"
          onSubmit={(e) => {
            e.preventDefault();
            setSaved("");
            void save.run(async () => {
              updateUser((await unwrap(api.PATCH("/auth/account", { body: { display_name: name } }))).data.user);
              setSaved("Your name is saved.");
            });
          }}
        >
          <h2>Profile</h2>
          <p class="muted">
            Signed in as <strong>{user?.email}</strong>
            {user?.is_admin ? ", administrator" : ""}.
          </p>
          <Field label="Display name" value={name} onValue={setName} />
          <ErrorNote error={save.error} />
          <button class="primary" disabled={save.pending}>
            Save
          </button>
        </form>
        <form
          class="panel"
          onSubmit={(e) => {
            e.preventDefault();
            setSaved("");
            void pw.run(async () => {
              checkPassword(next);
              await unwrap(api.PATCH("/auth/password", { body: { current_password: cur, new_password: next } }));
              setCur("");
              setNext("");
              setSaved("Your password is changed; your other sessions are signed out.");
            });
          }}
        >
          <h2>Password</h2>
          <Field label="Current password" type="password" autoComplete="current-password" required value={cur} onValue={setCur} />
          <Field label="New password" type="password" autoComplete="new-password" required value={next} onValue={setNext} hint={PASSWORD_RULE} />
          <ErrorNote error={pw.error} />
          <button class="primary" disabled={pw.pending}>
            Change password
          </button>
        </form>
      </div>
      {saved && <Notice>{saved}</Notice>}
      <div class="split">
        <ProfilePanel />
        <Locations />
      </div>
    </>
  );
}

function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        Nothing lives at this address. <Link to="/agents">Go to the agents</Link>.
      </p>
    </>
  );
}

function routeOf(path: string) {
  let m: Record<string, string> | null;
  if (path === "/" || path === "/agents") return <AgentList />;
  if (path === "/agents/new") return <NewAgent />;
  if (path === "/agents/import") return <ImportTemplate />;
  if ((m = match("/agents/:id", path))) return <AgentPage id={m.id} tab="chats" />;
  if ((m = match("/agents/:id/settings", path))) return <AgentPage id={m.id} tab="settings" />;
  if ((m = match("/agents/:id/tools", path))) return <AgentPage id={m.id} tab="tools" />;
  if ((m = match("/agents/:id/keys", path))) return <AgentPage id={m.id} tab="keys" />;
  if (path === "/tasks") return <TaskList />;
  if ((m = match("/tasks/:id", path))) return <TaskPage id={m.id} />;
  if (path === "/account") return <Account />;
  if (path === "/groups") return <GroupList />;
  if ((m = match("/groups/:id", path))) return <GroupPage id={m.id} tab="members" />;
  if ((m = match("/groups/:id/models", path))) return <GroupPage id={m.id} tab="models" />;
  if ((m = match("/groups/:id/tools", path))) return <GroupPage id={m.id} tab="tools" />;
  if ((m = match("/groups/:id/settings", path))) return <GroupPage id={m.id} tab="settings" />;
  if (path === "/users") return <UserList />;
  if ((m = match("/users/:id", path))) return <UserPage id={m.id} />;
  if (path === "/notifications") return <NotificationsPage />;
  if (path === "/approvals") return <ApprovalsPage />;
  if (path === "/usage") return <UsagePage />;
  if (path === "/settings") return <SettingsPage />;
  if (path === "/plugins") return <PluginsPage />;
  if ((m = match("/apps/:slug", path))) return <PluginApp slug={m.slug} />;
  if (path === "/media") return <MediaPage />;
  if ((m = match("/agents/:id/schedules", path))) return <AgentPage id={m.id} tab="schedules" />;
  if ((m = match("/agents/:id/memory", path))) return <AgentPage id={m.id} tab="memory" />;

  return <NotFound />;
}

export function App() {
  const { user } = useSession();
  const { path } = useRoute();
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    loadSession().catch((err: Error) => setError(`The server cannot be reached: ${err.message}`));
  }, []);
  // Focus the page's heading after a client navigation (not on the first load), so screen
  // readers announce the new page.
  const [landing] = useState(path);
  useEffect(() => {
    const h = document.getElementById("page-title");
    if (h && path !== landing && document.activeElement === document.body) h.focus({ preventScroll: true });
    document.title = `${h?.textContent ?? "svc"} · svc console`;
  });
  if (error) return <ErrorNote error={error} />;
  if (user === undefined) return <p role="status" class="loading">Loading…</p>;
  if (path === "/login") return user ? <Redirect to="/agents" /> : <Login />;
  if (path === "/register") return <Register />;
  if (path === "/forgot-password") return <ForgotPassword />;
  if (path === "/reset-password") return <ResetPassword />;
  if (path === "/confirm-email") return <ConfirmLink kind="email" />;
  if (path === "/verify" || path.startsWith("/verify/")) return <ConfirmLink kind="verify" />;
  if (!user) return <Redirect to={`/login?next=${encodeURIComponent(path)}`} />;
  return <Shell>{routeOf(path)}</Shell>;
}

function Redirect(props: { to: string }) {
  useEffect(() => navigate(props.to, true), [props.to]);
  return null;
}
