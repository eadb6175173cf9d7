// The caller's profile (names, locale, time zone, bio) and locations (add, make default, delete),
// shown on the account page.
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Schemas } from "../api";
import { updateUser, useSession } from "../session";
import { PictureEditor } from "./agentextra";
import { Check, ErrorNote, Field, TextArea, useAction, useLoad } from "../ui";

export function ProfilePanel() {
  const p = useLoad(async () => (await unwrap(api.GET("/me/profile"))).data.profile, []);
  const { user } = useSession();
  const [v, setV] = useState(0);
  return (
    <div>
      <ErrorNote error={p.error} />
      {p.data && <ProfileForm profile={p.data} />}
      {user && (
        <PictureEditor
          title="Your picture"
          inputId="my-picture"
          alt="Your picture"
          initial={user.display_name || user.email}
          src={user.picture_url ? `${prefix}/api/v1/me/picture?v=${v}` : null}
          upload={async (fd) => {
            await unwrap(api.POST("/me/picture/image", { body: { file: "" }, bodySerializer: () => fd }));
            updateUser((await unwrap(api.GET("/auth/me"))).data.user);
            setV((n) => n + 1);
          }}
          remove={async () => {
            await unwrap(api.DELETE("/me/picture/image"));
            updateUser({ ...user, picture_url: null });
          }}
        />
      )}
    </div>
  );
}

function ProfileForm(props: { profile: Schemas["Profile"] }) {
  const [f, setF] = useState({ first_name: props.profile.first_name, last_name: props.profile.last_name, locale: props.profile.locale, timezone: props.profile.timezone, bio: props.profile.bio });
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  const act = useAction();
  const [saved, setSaved] = useState(false);
  return (
    <form
      class="panel"
      aria-labelledby="profile-h"
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        void act.run(async () => {
          await unwrap(api.PUT("/me/profile", { body: f }));
          setSaved(true);
        });
      }}
    >
      <h2 id="profile-h">About you</h2>
      <div class="row">
        <Field label="First name" value={f.first_name} onValue={set("first_name")} />
        <Field label="Last name" value={f.last_name} onValue={set("last_name")} />
      </div>
      <div class="row">
        <Field label="Locale" value={f.locale} onValue={set("locale")} hint="e.g. en-GB" />
        <Field label="Time zone" value={f.timezone} onValue={set("timezone")} hint="e.g. Europe/London" />
      </div>
      <TextArea label="Bio" rows={3} value={f.bio} onValue={set("bio")} />
      <ErrorNote error={act.error} />
      {saved && <p class="notice">Profile saved.</p>}
      <button class="primary" disabled={act.pending}>
        Save profile
      </button>
    </form>
  );
}

export function Locations() {
  const list = useLoad(async () => (await unwrap(api.GET("/me/locations"))).data.locations, []);
  const [name, setName] = useState("");
  const [address, setAddress] = useState("");
  const [lat, setLat] = useState("");
  const [lon, setLon] = useState("");
  const [def, setDef] = useState(false);
  const add = useAction();
  const act = useAction();
  return (
    <section class="panel" aria-labelledby="loc-h">
      <h2 id="loc-h">Locations</h2>
      <p class="muted small">Agents' tools use your default location (weather, local time).</p>
      <ErrorNote error={list.error} />
      <ErrorNote error={act.error} />
      <ul class="plain">
        {(list.data ?? []).map((l) => (
          <li key={l.id}>
            <span>
              <strong>{l.name}</strong> {l.is_default && <span class="badge tone-ok">default</span>}
              <small class="muted block">
                {l.address}
                {l.latitude !== null && l.latitude !== undefined ? ` (${l.latitude}, ${l.longitude})` : ""}
              </small>
            </span>
            {!l.is_default && (
              <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.PUT("/me/locations/{id}", { params: { path: { id: l.id } }, body: { name: l.name, address: l.address || undefined, latitude: l.latitude ?? undefined, longitude: l.longitude ?? undefined, is_default: true } })), await list.reload()))}>
                Make default
              </button>
            )}
            <button type="button" class="small danger" aria-label={`Delete location ${l.name}`} disabled={act.pending} onClick={() => act.run(async () => (await unwrap(api.DELETE("/me/locations/{id}", { params: { path: { id: l.id } } })), await list.reload()))}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void add.run(async () => {
            await unwrap(api.POST("/me/locations", { body: { name, address: address || undefined, latitude: lat === "" ? undefined : Number(lat), longitude: lon === "" ? undefined : Number(lon), is_default: def } }));
            setName("");
            setAddress("");
            setLat("");
            setLon("");
            await list.reload();
          });
        }}
      >
        <div class="row">
          <Field label="Location name" required value={name} onValue={setName} />
          <Field label="Address" value={address} onValue={setAddress} />
        </div>
        <div class="row">
          <Field label="Latitude" value={lat} onValue={setLat} />
          <Field label="Longitude" value={lon} onValue={setLon} />
        </div>
        <Check label="Default location" checked={def} onChange={setDef} />
        <ErrorNote error={add.error} />
        <button disabled={add.pending}>Add location</button>
      </form>
    </section>
  );
}
