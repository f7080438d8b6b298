// Preloaded with `node --import` into an MCP server that listens on every interface (the
// reference server-everything's streamable HTTP transport calls `app.listen(PORT)` with no
// host): each server of the process listens on 127.0.0.1 only, and says its port on stderr
// (`loopback port N`), so a test can ask for PORT=0 and still find it.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const callbacks = args.filter((a) => typeof a === "function");
  const first = args[0];
  let options;
  if (first !== null && typeof first === "object") options = { ...first, host: "127.0.0.1" };
  else options = { port: Number(first ?? 0), host: "127.0.0.1" };
  this.once("listening", () => process.stderr.write(`loopback port ${this.address().port}\n`));
  return listen.call(this, options, ...callbacks);
};
