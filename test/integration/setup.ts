import '../setup-runtime';

// The CLI processes of the tests stand for a person who types `agent-jobs` (on the PATH): under
// `npx jest` npm's `npm_command=exec` would make their hints say `npx agent-jobs` (src/cli/invocation.ts).
// A test of that sets it on its own child.
delete process.env.npm_command;

// Integration runs wait on real Temporal timeouts (heartbeats, approvals,
// worker loss), so a test may take minutes.
jest.setTimeout(180_000);
