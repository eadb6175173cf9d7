// An agent's long-term memory (the memory tool's store): its managers list every user's
// memories, newest first or searched with the tool's recall ranking, edit a memory's text and
// delete memories. Paged like the API (25 a page).
import { useState } from "preact/hooks";
import { api, unwrap, type Agent, type Schemas } from "../api";
import { CancelButton, EditList, FormPanel } from "../crud";
import { ErrorNote, TextArea, formatTime, useLoad } from "../ui";

type Memory = Schemas["AgentMemory"];
const perPage = 25;

export function AgentMemory(props: { agent: Agent }) {
  const agentId = String(props.agent.id);
  const [q, setQ] = useState("");
  const [query, setQuery] = useState("");
  const [page, setPage] = useState(1);
  const list = useLoad(
    async () => (await unwrap(api.GET("/agents/{id}/memories", { params: { path: { id: agentId }, query: { page, per_page: perPage, q: query || undefined } } }))).data,
    [agentId, page, query],
  );
  const total = list.data?.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / perPage));
  return (
    <section class="panel" aria-labelledby="memory-h">
      <h2 id="memory-h">Memory</h2>
      <p class="muted">
        What the agent remembered with its <code>memory</code> tool, for every user it serves. Search ranks by the number of matching words, then the newest.
      </p>
      <form
        role="search"
        class="button-row"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setQuery(q.trim());
        }}
      >
        <input type="search" aria-label="Search memories" placeholder="Search memories" maxLength={500} value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <button>Search</button>
      </form>
      <ErrorNote error={list.error} />
      {list.data && (
        <p class="muted" role="status">
          {total === 1 ? "1 memory" : `${total} memories`}
          {query ? ` match “${query}”` : ""}
        </p>
      )}
      <EditList<Memory>
        items={list.data?.memories}
        keyOf={(m) => m.id}
        nameOf={(m) => String(m.id)}
        what="memory"
        empty={query ? "No memory matches." : "No memories yet."}
        itemClass="card wide"
        view={(m) => (
          <>
            <span>{m.text}</span>
            <small class="muted block">
              {m.user_id != null ? `user ${m.user_id}` : "whole agent"} · {formatTime(m.created_at)}
              {m.task_id != null && (
                <>
                  {" "}
                  · from task {m.task_id}
                  {m.message_sequence != null ? `, message ${m.message_sequence}` : ""}
                </>
              )}
            </small>
          </>
        )}
        edit={(m, close) => <EditMemory agentId={agentId} memory={m} onDone={async () => (await list.reload(), close())} onCancel={close} />}
        confirmRemove={(m) => `Delete the memory “${m.text.slice(0, 80)}”? The agent forgets it at once.`}
        remove={async (m) => (await unwrap(api.DELETE("/agents/{id}/memories/{memoryId}", { params: { path: { id: agentId, memoryId: String(m.id) } } })), await list.reload())}
      />
      {pages > 1 && (
        <div class="button-row">
          <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span class="muted">
            Page {page} of {pages}
          </span>
          <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </div>
      )}
    </section>
  );
}

function EditMemory(props: { agentId: string; memory: Memory; onDone: () => Promise<void>; onCancel: () => void }) {
  const [text, setText] = useState(props.memory.text);
  return (
    <FormPanel
      title="Edit memory"
      submit="Save"
      class=""
      secondary={<CancelButton onClick={props.onCancel} />}
      onSubmit={async () => {
        await unwrap(api.PATCH("/agents/{id}/memories/{memoryId}", { params: { path: { id: props.agentId, memoryId: String(props.memory.id) } }, body: { text } }));
        await props.onDone();
      }}
    >
      <TextArea label="Text" required value={text} onValue={setText} rows={3} />
    </FormPanel>
  );
}
