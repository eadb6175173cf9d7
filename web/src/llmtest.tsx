// Test connection: one real, minimal call with a stored model configuration (POST
// /groups/{id}/llm-configs/{cid}/test), through the driver and outbound screen a task's step
// uses; shows the model's reply or the precise refusal (task error code, HTTP status, message).
import { useState } from "preact/hooks";
import { api, unwrap, type Schemas } from "./api";
import { ErrorNote, useAction } from "./ui";

export function TestConnection(props: { groupId: number; configId: number; name: string }) {
  const act = useAction();
  const [res, setRes] = useState<Schemas["LlmConfigTest"] | null>(null);
  return (
    <span class="test-connection">
      <button
        type="button"
        class="small"
        disabled={act.pending}
        aria-label={`Test connection of ${props.name}`}
        onClick={() =>
          act.run(async () => {
            setRes(null);
            setRes((await unwrap(api.POST("/groups/{id}/llm-configs/{cid}/test", { params: { path: { id: props.groupId, cid: props.configId } } }))).data.test);
          })
        }
      >
        {act.pending ? "Testing…" : "Test connection"}
      </button>
      <ErrorNote error={act.error} />
      {res && (
        <p class={res.ok ? "notice" : "error"} role="status" data-testid="llm-test-result">
          {res.ok ? (
            <>
              Connected: {res.model} answered “{res.reply}” in {res.duration_ms} ms.
            </>
          ) : (
            <>
              Refused ({res.error_code}
              {res.status_code ? `, HTTP ${res.status_code}` : ""}): {res.message}
            </>
          )}
        </p>
      )}
    </span>
  );
}
