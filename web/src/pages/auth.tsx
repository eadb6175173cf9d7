// Signing in and out, registration, and the pages the mailed links open: password reset
// (/reset-password), email change confirmation (/confirm-email) and account verification
// (/verify, the same selector and token as the API's /auth/verify link).
import { useEffect, useState } from "preact/hooks";
import { type Schemas, api, unwrap } from "../api";
import { navigate, useRoute } from "../router";
import { signedIn, useSession } from "../session";
import { ErrorNote, Field, Link, Notice, PASSWORD_RULE, checkPassword, useAction } from "../ui";

function AuthCard(props: { title: string; children: preact.ComponentChildren }) {
  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <p class="brand-big" aria-hidden="true">
          svc
        </p>
        <h1 id="page-title" tabIndex={-1}>
          {props.title}
        </h1>
        {props.children}
      </div>
    </main>
  );
}

type SSOProvider = { slug: string; display_name: string; start_url: string; logout_url: string };

/** Signs in with a password, or through a single sign-on provider (one button each). With a
 * link ticket in the address (?oidc_link=…, after a provider sign-in whose email matches an
 * account), it asks for that account's password once to link the identity. */
export function Login() {
  const { config } = useSession();
  const { query } = useRoute();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [providers, setProviders] = useState<SSOProvider[]>([]);
  const [passwordOffered, setPasswordOffered] = useState(true);
  const [breakGlass, setBreakGlass] = useState(false);
  const act = useAction();
  const ticket = query.get("oidc_link");
  useEffect(() => {
    void api.GET("/auth/oidc/providers").then((r) => {
      if (r.data) {
        setProviders(r.data.data.providers);
        setPasswordOffered(r.data.data.password_login_enabled);
      }
    });
  }, []);
  const done = (r: { data: { user: Schemas["User"]; csrf_token: string } }) => {
    signedIn(r.data.user, r.data.csrf_token);
    const next = query.get("next");
    navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/agents", true);
  };
  const submit = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      if (ticket) {
        done(await unwrap(api.POST("/auth/oidc/link", { body: { ticket, password } })));
      } else {
        done(await unwrap(api.POST("/auth/login", { body: { email, password } })));
      }
    });
  };
  if (ticket) {
    return (
      <AuthCard title="Link your account">
        <p class="muted">An account already uses this email address. Enter its password once to link your single sign-on identity to it.</p>
        <form onSubmit={submit} aria-describedby="login-error">
          <Field label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
          <ErrorNote error={act.error} id="login-error" />
          <button class="primary wide" disabled={act.pending}>
            {act.pending ? "Linking…" : "Link and sign in"}
          </button>
        </form>
      </AuthCard>
    );
  }
  const showForm = passwordOffered || breakGlass;
  const logouts = query.get("signed_out") ? providers.filter((p) => p.logout_url) : [];
  return (
    <AuthCard title="Sign in">
      {logouts.length > 0 && (
        <Notice>
          You are signed out here.{" "}
          {logouts.map((p) => (
            <a key={p.slug} href={p.logout_url}>
              Sign out of {p.display_name} too
            </a>
          ))}
        </Notice>
      )}
      {providers.length > 0 && (
        <div class="sso-buttons">
          {providers.map((p) => (
            <a key={p.slug} class="button wide" href={p.start_url}>
              Sign in with {p.display_name}
            </a>
          ))}
        </div>
      )}
      {showForm ? (
        <form onSubmit={submit} aria-describedby="login-error">
          <Field label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} />
          <Field label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
          <ErrorNote error={act.error} id="login-error" />
          <button class="primary wide" disabled={act.pending}>
            {act.pending ? "Signing in…" : "Sign in"}
          </button>
        </form>
      ) : (
        <p class="auth-links">
          <button class="link" type="button" onClick={() => setBreakGlass(true)}>
            Administrator sign-in with a password
          </button>
        </p>
      )}
      {showForm && (
        <p class="auth-links">
          <Link to="/forgot-password">Forgot your password?</Link>
          {config?.allow_registration !== false && <Link to="/register">Create an account</Link>}
        </p>
      )}
    </AuthCard>
  );
}

export function Register() {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const act = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      checkPassword(password);
      await unwrap(api.POST("/auth/register", { body: { email, password, display_name: name || undefined } }));
      const r = await unwrap(api.POST("/auth/login", { body: { email, password } }));
      signedIn(r.data.user, r.data.csrf_token);
      navigate("/agents", true);
    });
  };
  return (
    <AuthCard title="Create an account">
      <p class="muted">The first account of a new installation becomes its administrator.</p>
      <form onSubmit={submit}>
        <Field label="Email" type="email" autoComplete="email" required value={email} onValue={setEmail} />
        <Field label="Display name (optional)" autoComplete="name" value={name} onValue={setName} />
        <Field label="Password" type="password" autoComplete="new-password" required value={password} onValue={setPassword} hint={PASSWORD_RULE} />
        <ErrorNote error={act.error} />
        <button class="primary wide" disabled={act.pending}>
          {act.pending ? "Creating…" : "Create account"}
        </button>
      </form>
      <p class="auth-links">
        <Link to="/login">I already have an account</Link>
      </p>
    </AuthCard>
  );
}

export function ForgotPassword() {
  const [email, setEmail] = useState("");
  const [sent, setSent] = useState(false);
  const act = useAction();
  return (
    <AuthCard title="Reset your password">
      {sent ? (
        <Notice>If an account uses {email}, a reset link is on its way. The link works once, for one hour.</Notice>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              await unwrap(api.POST("/auth/forgot-password", { body: { email } }));
              setSent(true);
            });
          }}
        >
          <Field label="Email" type="email" autoComplete="email" required value={email} onValue={setEmail} />
          <ErrorNote error={act.error} />
          <button class="primary wide" disabled={act.pending}>
            Send the reset link
          </button>
        </form>
      )}
      <p class="auth-links">
        <Link to="/login">Back to sign in</Link>
      </p>
    </AuthCard>
  );
}

export function ResetPassword() {
  const { query } = useRoute();
  const selector = query.get("selector") ?? "";
  const token = query.get("token") ?? "";
  const [password, setPassword] = useState("");
  const [done, setDone] = useState(false);
  const act = useAction();
  return (
    <AuthCard title="Choose a new password">
      {!selector || !token ? (
        <ErrorNote error="This page needs the link from the reset mail (it carries a selector and a token)." />
      ) : done ? (
        <Notice>
          Your password is changed. <Link to="/login">Sign in</Link>
        </Notice>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              checkPassword(password);
              await unwrap(api.POST("/auth/reset-password", { body: { selector, token, new_password: password } }));
              setDone(true);
            });
          }}
        >
          <Field label="New password" type="password" autoComplete="new-password" required value={password} onValue={setPassword} hint={PASSWORD_RULE} />
          <ErrorNote error={act.error} />
          <button class="primary wide" disabled={act.pending}>
            Set the password
          </button>
        </form>
      )}
    </AuthCard>
  );
}

/** Confirms an email change (/confirm-email) or verifies an account (/verify). */
export function ConfirmLink(props: { kind: "email" | "verify" }) {
  const { query, path } = useRoute();
  const selector = query.get("selector") ?? path.split("/")[2] ?? "";
  const token = query.get("token") ?? "";
  const [state, setState] = useState<"working" | "done" | "failed">("working");
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!selector || !token) {
      setState("failed");
      setError("This page needs the link from the mail (it carries a selector and a token).");
      return;
    }
    const p =
      props.kind === "email"
        ? unwrap(api.POST("/auth/email/confirm", { body: { selector, token } }))
        : unwrap(api.GET("/auth/verify/{selector}", { params: { path: { selector }, query: { token } } }));
    p.then(
      () => setState("done"),
      (err: Error) => {
        setState("failed");
        setError(err.message);
      },
    );
  }, [selector, token, props.kind]);
  return (
    <AuthCard title={props.kind === "email" ? "Confirm your new email" : "Verify your account"}>
      {state === "working" && <p role="status">Checking the link…</p>}
      {state === "done" && <Notice>{props.kind === "email" ? "Your email address is changed." : "Your account is verified."}</Notice>}
      <ErrorNote error={error} />
      <p class="auth-links">
        <Link to="/agents">Continue to the console</Link>
      </p>
    </AuthCard>
  );
}
