// The API client: openapi-fetch over the types generated from ../openapi.yaml (src/api/schema.d.ts,
// written by `npm run gen`), so a change of the contract that breaks the console fails its
// type check. Same origin only: the session cookie travels by itself (HttpOnly, never read
// here), the CSRF token comes from /auth/me or the login answer and lives in memory only.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./api/schema";

export type Schemas = components["schemas"];
export type Agent = Schemas["Agent"];
export type Task = Schemas["Task"];
export type User = Schemas["User"];
export type TaskStatus = Schemas["TaskStatus"];

/** The mount prefix, filled in by the server into index.html ("" at the host root). */
export const prefix: string = document.querySelector<HTMLMetaElement>('meta[name="svc-prefix"]')?.content ?? "/svc";

let csrf = "";
let onUnauthenticated: () => void = () => {};

export function setCsrf(token: string): void {
  csrf = token;
}

/** Called when a request answers 401 UNAUTHENTICATED (the session ended). */
export function whenUnauthenticated(f: () => void): void {
  onUnauthenticated = f;
}

const session: Middleware = {
  onRequest({ request }) {
    if (request.method !== "GET" && request.method !== "HEAD" && csrf) request.headers.set("X-CSRF-Token", csrf);
    return request;
  },
  onResponse({ request, response }) {
    if (response.status === 401 && !request.url.includes("/auth/")) onUnauthenticated();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: `${prefix}/api/v1`, credentials: "same-origin" });
api.use(session);

/** The message of a refusal: the envelope's error.message, or a description of the failure. */
export function messageOf(error: unknown, response?: Response): string {
  const e = error as { error?: { message?: string; code?: string } } | undefined;
  if (e?.error?.message) return e.error.message;
  if (response) return `The server answered ${response.status} ${response.statusText}`.trim();
  if (error instanceof Error) return error.message;
  return "The request failed";
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** unwrap returns data or throws an ApiError carrying the envelope's message. */
export async function unwrap<T>(p: Promise<Result<T>>): Promise<T> {
  let r: Result<T>;
  try {
    r = await p;
  } catch (err) {
    throw new ApiError(err instanceof Error ? `Network error: ${err.message}` : "Network error", 0, "");
  }
  if (r.data !== undefined && r.response.ok) return r.data;
  const env = r.error as { error?: { code?: string } } | undefined;
  throw new ApiError(messageOf(r.error, r.response), r.response.status, env?.error?.code ?? "");
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
