import '../setup-runtime';

// Integration runs wait on real Temporal timeouts (heartbeats, approvals,
// worker loss), so a test may take minutes.
jest.setTimeout(180_000);
