// Single sign-on providers (issue 30), on the settings page: the list with each provider's
// redirect URI to register at the provider, removal, and a form adding one. The client secret is
// write-only; group mappings are written one per line as "claim value = group id : role".
import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "../api";
import { FormPanel } from "../crud";
import { Check, ErrorNote, Field, TextArea, useAction, useLoad } from "../ui";

type Mapping = Schemas["OidcGroupMapping"];

/** parseMappings reads "research = 12 : member" lines; it throws on a line it cannot read. */
function parseMappings(text: string): Mapping[] {
  const out: Mapping[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const m = /^(.+?)\s*=\s*(\d+)\s*:\s*(member|admin)$/.exec(line);
    if (!m) throw new Error(`Group mapping "${line}": write "claim value = group id : member" (or admin)`);
    out.push({ claim_value: m[1], group_id: Number(m[2]), role: m[3] as Mapping["role"] });
  }
  return out;
}

export function SSOProviders() {
  const list = useLoad(async () => (await unwrap(api.GET("/oidc-providers"))).data.providers, []);
  const del = useAction();
  const blank = { slug: "", display_name: "", issuer_url: "", client_id: "", client_secret: "", scopes: "openid email profile", groups_claim: "", mappings: "", logout_url: "" };
  const [f, setF] = useState(blank);
  const [register, setRegister] = useState(false);
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  return (
    <div>
      <section class="panel" aria-labelledby="sso-h">
        <h2 id="sso-h">Single sign-on providers</h2>
        <ErrorNote error={list.error ?? del.error} />
        {(list.data ?? []).length === 0 ? (
          <p class="muted small">None: accounts sign in with their password.</p>
        ) : (
          <ul class="plain">
            {(list.data ?? []).map((p) => (
              <li key={p.slug}>
                <strong>{p.display_name}</strong> <span class="chip">{p.slug}</span>
                {p.allow_registration && <span class="chip">registration</span>}
                <small class="muted block mono">{p.issuer_url}</small>
                <small class="muted block">
                  Redirect URI to register: <span class="mono">{p.redirect_uri}</span>
                </small>
                {p.group_mappings.length > 0 && (
                  <small class="muted block">
                    Claim <span class="mono">{p.groups_claim}</span>: {p.group_mappings.map((m) => `${m.claim_value} → group ${m.group_id} (${m.role})`).join(", ")}
                  </small>
                )}
                <button
                  type="button"
                  class="danger small"
                  aria-label={`Remove provider ${p.display_name}`}
                  disabled={del.pending}
                  onClick={() => {
                    if (!confirm(`Remove the provider ${p.display_name}? Its identities are unlinked; accounts stay.`)) return;
                    void del.run(async () => {
                      await unwrap(api.DELETE("/oidc-providers/{slug}", { params: { path: { slug: p.slug } } }));
                      await list.reload();
                    });
                  }}
                >
                  Remove
                </button>
              </li>
            ))}
          </ul>
        )}
      </section>
      <FormPanel
        title="Add a provider"
        submit="Add provider"
        saved="Added."
        onSubmit={async () => {
          await unwrap(
            api.POST("/oidc-providers", {
              body: {
                slug: f.slug,
                display_name: f.display_name,
                issuer_url: f.issuer_url,
                client_id: f.client_id,
                client_secret: f.client_secret,
                scopes: f.scopes.split(/\s+/).filter(Boolean),
                allow_registration: register,
                groups_claim: f.groups_claim,
                group_mappings: parseMappings(f.mappings),
                logout_url: f.logout_url,
              },
            }),
          );
          setF(blank);
          await list.reload();
        }}
      >
        <div class="row">
          <Field label="Slug" required value={f.slug} onValue={set("slug")} hint="Lowercase letters, digits and dashes; part of the redirect URI." />
          <Field label="Display name" required value={f.display_name} onValue={set("display_name")} />
        </div>
        <Field label="Issuer URL" required value={f.issuer_url} onValue={set("issuer_url")} hint="A private host must be listed in oidc_allowed_hosts." />
        <div class="row">
          <Field label="Client id" required value={f.client_id} onValue={set("client_id")} />
          <Field label="Client secret" type="password" autoComplete="new-password" required value={f.client_secret} onValue={set("client_secret")} hint="Encrypted at rest, never shown again." />
        </div>
        <Field label="Scopes" value={f.scopes} onValue={set("scopes")} />
        <Check label="A first sign-in without an account creates one" checked={register} onChange={setRegister} />
        <Field label="Groups claim (optional)" value={f.groups_claim} onValue={set("groups_claim")} />
        <TextArea label="Group mappings (optional)" rows={3} mono value={f.mappings} onValue={set("mappings")} hint='One per line: "claim value = group id : member" (or admin); applied at each sign-in.' />
        <Field label="Provider logout URL (optional)" value={f.logout_url} onValue={set("logout_url")} />
      </FormPanel>
    </div>
  );
}
