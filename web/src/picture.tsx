// A picture with upload and remove, shared by the agent pages (agentextra.tsx) and the group
// settings (groups.tsx), and the one-file form body of the upload endpoints.
import { ErrorNote, useAction } from "./ui";

/** A form data body holding one file, as the upload endpoints take it. */
export function fileForm(file: File): FormData {
  const fd = new FormData();
  fd.append("file", file);
  return fd;
}

/** A picture with upload and remove; src is null when there is none. */
export function PictureEditor(props: { title: string; alt: string; initial: string; src: string | null; upload: (fd: FormData) => Promise<unknown>; remove: () => Promise<unknown>; inputId: string }) {
  const act = useAction();
  return (
    <section class="panel" aria-labelledby={`${props.inputId}-h`}>
      <h2 id={`${props.inputId}-h`}>{props.title}</h2>
      <div class="picture-row">
        {props.src ? <img class="avatar" src={props.src} alt={props.alt} /> : <span class="avatar empty" aria-hidden="true">{props.initial.slice(0, 1).toUpperCase()}</span>}
        <div>
          <label class="button" for={props.inputId}>
            Upload a picture
          </label>
          <input
            id={props.inputId}
            class="sr-only"
            type="file"
            accept="image/png,image/jpeg,image/webp,image/gif"
            onChange={(e) => {
              const f = (e.target as HTMLInputElement).files?.[0];
              (e.target as HTMLInputElement).value = "";
              if (f) void act.run(() => props.upload(fileForm(f)));
            }}
          />
          {props.src && (
            <button type="button" class="link" disabled={act.pending} onClick={() => act.run(props.remove)}>
              Remove
            </button>
          )}
          <p class="hint">PNG, JPEG, WebP or GIF.</p>
        </div>
      </div>
      {act.pending && <p role="status">Uploading…</p>}
      <ErrorNote error={act.error} />
    </section>
  );
}
