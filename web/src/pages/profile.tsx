// The caller's profile (names, locale, time zone, bio) and locations (add, edit, make default, delete),
// shown on the account page.
import { useState } from "preact/hooks";
import { api, prefix, unwrap, type Schemas } from "../api";
import { updateUser, useSession } from "../session";
import { PictureEditor } from "../picture";
import { CancelButton, EditList, FormPanel } from "../crud";
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
  return (
    <FormPanel title="About you" submit="Save profile" saved="Profile saved." onSubmit={() => unwrap(api.PUT("/me/profile", { body: f }))}>
      <div class="row">
        <Field label="First name" value={f.first_name} onValue={set("first_name")} />
        <Field label="Last name" value={f.last_name} onValue={set("last_name")} />
      </div>
      <div class="row">
        <Field label="Locale" value={f.locale} onValue={set("locale")} hint="e.g. en-GB" />
        <Field label="Time zone" value={f.timezone} onValue={set("timezone")} hint="e.g. Europe/London" />
      </div>
      <TextArea label="Bio" rows={3} value={f.bio} onValue={set("bio")} />
    </FormPanel>
  );
}

type Location = Schemas["Location"];

const locationBody = (l: Location) => ({ name: l.name, address: l.address || undefined, latitude: l.latitude ?? undefined, longitude: l.longitude ?? undefined, is_default: l.is_default });

export function Locations() {
  const list = useLoad(async () => (await unwrap(api.GET("/me/locations"))).data.locations, []);
  const act = useAction();
  const [added, setAdded] = useState(0); // a new, empty form after each add (not when the list loads)
  const put = (l: Location, body: Schemas["LocationInput"]) => unwrap(api.PUT("/me/locations/{id}", { params: { path: { id: l.id } }, body }));
  return (
    <section class="panel" aria-labelledby="loc-h">
      <h2 id="loc-h">Locations</h2>
      <p class="muted small">Agents' tools use your default location (weather, local time).</p>
      <ErrorNote error={list.error} />
      <ErrorNote error={act.error} />
      <EditList
        items={list.data}
        keyOf={(l) => l.id}
        nameOf={(l) => l.name}
        what="location"
        empty="No locations yet."
        busy={act.pending}
        view={(l) => (
          <>
            <strong>{l.name}</strong> {l.is_default && <span class="badge tone-ok">default</span>}
            <small class="muted block">
              {l.address}
              {l.latitude !== null && l.latitude !== undefined ? ` (${l.latitude}, ${l.longitude})` : ""}
            </small>
          </>
        )}
        actions={(l) =>
          !l.is_default && (
            <button type="button" class="small" disabled={act.pending} onClick={() => act.run(async () => (await put(l, { ...locationBody(l), is_default: true }), await list.reload()))}>
              Make default
            </button>
          )
        }
        edit={(l, close) => <LocationForm location={l} onSave={async (body) => (await put(l, body), await list.reload(), close())} onCancel={close} />}
        remove={async (l) => (await unwrap(api.DELETE("/me/locations/{id}", { params: { path: { id: l.id } } })), await list.reload())}
      />
      <LocationForm key={`new-${added}`} onSave={async (body) => (await unwrap(api.POST("/me/locations", { body })), await list.reload(), setAdded((n) => n + 1))} />
    </section>
  );
}

/** Adds a location, or (location set) edits it. Coordinates are optional, both or neither. */
function LocationForm(props: { location?: Location; onSave: (body: Schemas["LocationInput"]) => Promise<unknown>; onCancel?: () => void }) {
  const l = props.location;
  const num = (n: number | null | undefined) => (n === null || n === undefined ? "" : String(n));
  const [f, setF] = useState({ name: l?.name ?? "", address: l?.address ?? "", lat: num(l?.latitude), lon: num(l?.longitude), def: l?.is_default ?? false });
  const set = (k: keyof typeof f) => (v: string) => setF((o) => ({ ...o, [k]: v }));
  return (
    <FormPanel
      class=""
      title={l ? `Edit “${l.name}”` : "Add a location"}
      submit={l ? "Save location" : "Add location"}
      tone={l ? "primary" : ""}
      secondary={props.onCancel && <CancelButton onClick={props.onCancel} />}
      onSubmit={() => props.onSave({ name: f.name, address: f.address || undefined, latitude: f.lat === "" ? undefined : Number(f.lat), longitude: f.lon === "" ? undefined : Number(f.lon), is_default: f.def })}
    >
      <div class="row">
        <Field label="Location name" required value={f.name} onValue={set("name")} />
        <Field label="Address" value={f.address} onValue={set("address")} />
      </div>
      <div class="row">
        <Field label="Latitude" value={f.lat} onValue={set("lat")} />
        <Field label="Longitude" value={f.lon} onValue={set("lon")} />
      </div>
      <Check label="Default location" checked={f.def} onChange={(v) => setF((o) => ({ ...o, def: v }))} />
    </FormPanel>
  );
}
