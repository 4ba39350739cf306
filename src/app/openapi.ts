/** The API description shown at /docs: the decisions the spec leaves open live here and in the README. */
export const API_DESCRIPTION = `
Checkout and order-management API for direct-to-consumer funnels.

**Authentication.** Every \`/checkout/*\` and \`/v1/*\` request carries \`Authorization: Bearer csk_…\`.
A missing, unknown, revoked or expired token answers 401. Another team's ids answer 404.

**Envelope.** Every response is \`{ success, message, data }\`. Errors add
\`error: { type, code, fields? }\` (a stable \`code\` from one catalogue; \`fields\` lists the failing
paths of a validation error, e.g. \`payment.card_exp\`). Validation errors are 422.

**Money** is an integer in minor units (cents) with the campaign's ISO 4217 currency.

**Idempotency.** Any POST under \`/checkout\` or \`/v1\` accepts an \`Idempotency-Key\` header (1–255
characters). Keys are scoped to the team and kept 24 hours. A retry with the same body replays the
first response exactly, with \`Idempotent-Replayed: true\`; a retry while the first is still running
answers 409 \`idempotency_in_flight\`; the same key with a different body answers 422
\`idempotency_key_reused\`. 5xx responses are not stored, so they can be retried.

**Limits.** JSON bodies nested deeper than 32 levels are refused (400 \`malformed_json\`); a NUL
or an unpaired surrogate in any string, key, query or path parameter is 422 naming the field.
Requests are budgeted per token and per client address, reads apart from writes (429
\`rate_limited\` with \`Retry-After\` and \`RateLimit-*\` headers); an overloaded server answers 503
\`overloaded\` at once, and a database restart 503 \`database_unavailable\` (both with
\`Retry-After\`; retry with the same \`Idempotency-Key\`: a key whose request ended in that 503 is released).

**Lists** (\`GET /v1/…\`) return newest first: \`data\` is an array, \`has_more\` says whether more follow.
Pass \`limit\` (1–100, default 20) and \`starting_after\` (the last id you received) to page.
`.trim();
