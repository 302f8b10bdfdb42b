// Drives chargenet's authorization server with the npm `oauth4webapi` client (an implementation independent of
// ours): discovery, a client credentials grant authenticated by private_key_jwt, introspection and revocation,
// and the assertions and requests the server must refuse.
// Input on stdin: {"issuer", "clientId", "privateKey" (PKCS#8 PEM, P-256), "kid", "other": {"clientId", "secret"}}.
// Output on stdout: one JSON object of what each step gave ({"error": ...} for a refused one).
import * as oauth from "oauth4webapi";
import { readFileSync } from "node:fs";
import { createPrivateKey } from "node:crypto";

const input = JSON.parse(readFileSync(0, "utf8"));
const insecure = { [oauth.allowInsecureRequests]: true }; // the test server listens on plain http on loopback

async function importKey(pem) {
  const der = createPrivateKey(pem).export({ format: "der", type: "pkcs8" });
  return crypto.subtle.importKey("pkcs8", der, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
}

async function outcome(step) {
  try {
    return await step();
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return { error: error.error, status: error.status };
    if (error instanceof oauth.WWWAuthenticateChallengeError) {
      // A 401 with a challenge (RFC 6749 §5.2 invalid_client): the client stops at the header; read the body too.
      const body = await error.response.json();
      return { error: body.error, status: error.status, challenge: error.cause[0].scheme };
    }
    return { error: String(error) };
  }
}

async function main() {
  const issuer = new URL(input.issuer);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
  );
  const client = { client_id: input.clientId };
  const key = { key: await importKey(input.privateKey), kid: input.kid };
  const signed = (modify) => oauth.PrivateKeyJwt(key, modify ? { [oauth.modifyAssertion]: modify } : undefined);
  const grant = (auth) => async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, client, auth, {}, insecure);
    return oauth.processClientCredentialsResponse(as, client, response);
  };
  const introspect = (who, auth, token) => async () => {
    const response = await oauth.introspectionRequest(as, who, auth, token, insecure);
    return oauth.processIntrospectionResponse(as, who, response);
  };
  const revoke = (who, auth, token) => async () => {
    const response = await oauth.revocationRequest(as, who, auth, token, insecure);
    await oauth.processRevocationResponse(response);
    return { revoked: true };
  };
  const other = { client_id: input.other.clientId };
  const otherAuth = oauth.ClientSecretBasic(input.other.secret);

  const result = { metadata: as };
  const granted = await outcome(grant(signed()));
  result.grant = granted;
  const token = granted.access_token;
  result.introspection = await outcome(introspect(client, signed(), token));
  result.introspectionByOther = await outcome(introspect(other, otherAuth, token));
  result.revocationByOther = await outcome(revoke(other, otherAuth, token));
  result.introspectionAfterRefusal = await outcome(introspect(client, signed(), token));
  result.revocation = await outcome(revoke(client, signed(), token));
  result.introspectionAfterRevocation = await outcome(introspect(client, signed(), token));
  result.revocationOfUnknown = await outcome(revoke(client, signed(), "not-a-token"));
  result.wrongAudience = await outcome(grant(signed((_h, payload) => (payload.aud = "https://elsewhere.example/"))));
  result.expired = await outcome(
    grant(
      signed((_h, payload) => {
        payload.exp -= 3600;
        payload.iat -= 3600;
        payload.nbf -= 3600;
      }),
    ),
  );
  let reused;
  result.firstOfReused = await outcome(
    grant(signed((_h, payload) => (reused ? (payload.jti = reused) : (reused = payload.jti)))),
  );
  result.reusedJti = await outcome(grant(signed((_h, payload) => (payload.jti = reused))));
  result.hmac = await outcome(grant(oauth.ClientSecretJwt(input.other.secret)));
  result.none = await outcome(grant(oauth.None()));
  result.token = token;
  process.stdout.write(JSON.stringify(result));
}

main().catch((error) => {
  process.stdout.write(JSON.stringify({ failed: String(error), stack: error.stack }));
});
