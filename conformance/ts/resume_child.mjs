// A new client process resuming a session: `node resume_child.mjs HOME PROJECT SESSION_ID MODEL_URL`.
// Prints {"answer": ..., "events": [...]} as its last line.

import { newClient, sessionOptions } from "./harness.mjs";
import { sdk } from "./harness.mjs";

const [home, project, id, url] = process.argv.slice(2);
const client = newClient({ home, project });
const events = [];
try {
  const session = await client.resumeSession(
    id,
    sessionOptions(url, events, { onPermissionRequest: sdk.approveAll }),
  );
  const answer = await session.sendAndWait("Please continue", 60_000);
  await session.disconnect();
  console.log(JSON.stringify({ answer: answer?.data?.content ?? null, events }));
} finally {
  await client.stop();
}
