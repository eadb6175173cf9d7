package store

// The store is split by aggregate: each group of exported methods is declared on its own type,
// so `go doc store.Tasks` lists the task queries, `store.Agents` the agents', and so on, and a
// method of one aggregate that needs another says so (s.Store.GroupByID). Every aggregate
// shares the one Store underneath (its connection pool, transactions, clock and commit
// listeners) and Store embeds them all, so *Store satisfies every consumer's interface. What a
// consumer may call is what its own small interface declares (agentloop.Store, task.Store,
// notification.Store …): the aggregates group the code, the interfaces bound the use.

// Tasks holds the tasks and their runs: creation, the claim, steps and leases, transitions,
// tool calls, questions, messages, events, sub-agents and chats.
type Tasks struct{ *Store }

// Agents holds the agents and what hangs on them: model configurations, tool configuration,
// schedules and prompt templates, per-agent API keys, pictures, imports.
type Agents struct{ *Store }

// Principals holds the users, groups, memberships, sessions and one-time tokens.
type Principals struct{ *Store }

// Outboxes holds the durable outboxes: mail, chat callbacks (webhook deliveries) and the
// notification notices.
type Outboxes struct{ *Store }

// Inbox holds the users' in-app notifications and their subscriptions.
type Inbox struct{ *Store }

// Media holds the media assets and their scopes.
type Media struct{ *Store }
