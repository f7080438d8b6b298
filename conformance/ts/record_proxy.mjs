// A recording HTTP proxy on 127.0.0.1: every request (method, path, headers, body) is appended
// to a JSON-lines file, then forwarded unchanged to the upstream (the scripted model) and the
// answer streamed back. Lets the harness see exactly what a runtime sends, headers included,
// whichever runtime it is.

import { createServer, request as httpRequest } from "node:http";
import { appendFileSync } from "node:fs";

/** Starts a proxy to `upstream` (an http://127.0.0.1:PORT base); resolves to {url, stop}.
 * `answers` maps a request path (query cut) to a JSON body served by the proxy itself, for
 * endpoints the scripted model does not know (the Copilot API's `GET /models`). */
export function startRecordingProxy(upstream, recordPath, { answers = {} } = {}) {
  const target = new URL(upstream);
  if (target.hostname !== "127.0.0.1") throw new Error(`upstream must be loopback: ${upstream}`);
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let body = null;
      if (raw.length > 0) {
        const text = raw.toString("utf8");
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      appendFileSync(
        recordPath,
        JSON.stringify({ method: req.method, path: req.url, headers: req.headers, body }) + "\n",
      );
      const own = answers[(req.url ?? "").split("?")[0]];
      if (own !== undefined) {
        const text = JSON.stringify(own);
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      const headers = { ...req.headers, host: target.host };
      const up = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        },
      );
      up.on("error", (e) => {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`recording proxy: upstream failed: ${e.message}`);
      });
      up.end(raw);
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        url: `http://127.0.0.1:${port}`,
        stop: () =>
          new Promise((r) => {
            server.close(() => r());
            server.closeAllConnections();
          }),
      });
    });
  });
}
