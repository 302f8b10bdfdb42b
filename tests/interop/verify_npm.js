// Verifies one chargenet webhook request with the npm `http-message-signatures` package (an implementation
// independent of ours), plus our own Content-Digest check, since that package does not look at the body.
// Input on stdin: {"method", "url", "headers", "body" (base64), "keys": {"ed25519": PEM, "rsa": PEM}}.
// Output on stdout: {"signature": true|false|null, "digest": true|false, "error"?: string}.
"use strict";
const crypto = require("crypto");
const { httpbis, createVerifier } = require("http-message-signatures");
const { parseDictionary } = require("structured-headers");

function rsaPssSha512(pem) {
  // The package's own rsa-pss-sha512 verifier leaves the salt length to OpenSSL's default; RFC 9421 §3.3.1 says 64.
  const key = crypto.createPublicKey(pem);
  return async (data, signature) =>
    crypto.verify("sha512", data, { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 }, signature);
}

function digestMatches(headers, body) {
  const name = Object.keys(headers).find((h) => h.toLowerCase() === "content-digest");
  if (!name) return false;
  const members = parseDictionary(headers[name]);
  const expected = { "sha-256": "sha256", "sha-512": "sha512" };
  let checked = 0;
  for (const [algorithm, [value]] of members) {
    if (!expected[algorithm]) continue;
    const actual = crypto.createHash(expected[algorithm]).update(body).digest();
    if (!Buffer.from(value).equals(actual)) return false;
    checked += 1;
  }
  return checked > 0;
}

async function main() {
  const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const body = Buffer.from(input.body, "base64");
  const request = { method: input.method, url: input.url, headers: input.headers };
  const result = { signature: null, digest: digestMatches(input.headers, body) };
  try {
    result.signature = await httpbis.verifyMessage(
      {
        requiredFields: ["@method", "@path", "x-request-id", "content-digest"],
        requiredParams: ["created", "keyid", "alg"],
        keyLookup: async (params) => {
          if (params.keyid !== "sign") return null;
          if (params.alg === "ed25519") return { verify: createVerifier(input.keys.ed25519, "ed25519") };
          if (params.alg === "rsa-pss-sha512") return { verify: rsaPssSha512(input.keys.rsa) };
          return null;
        },
      },
      request,
    );
  } catch (error) {
    result.signature = false;
    result.error = String(error);
  }
  process.stdout.write(JSON.stringify(result));
}

main();
