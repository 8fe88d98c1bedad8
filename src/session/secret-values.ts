/**
 * Secret values by their shape, whatever the variable's name: the rules {@link isSecretEnvValue} applies to each
 * value of the worker's environment before a session gets it (env.ts `buildSessionEnv`) and before the worker hides
 * variables from its own `/proc/<pid>/environ` (worker.ts). A value that matches is removed from the session's
 * environment and, when at least 8 characters long (env.ts `MIN_REDACTED_SECRET_LENGTH`), redacted from outputs.
 */

/**
 * A URL's scheme and `//` (RFC 3986 section 3.1), case-insensitive; at most 32 characters (a longer one matches by its
 * end), so that a long run of letters costs linear time, not one scan per start.
 */
const SCHEME = String.raw`[a-z][a-z0-9+.-]{0,31}:\/\/`;

/**
 * A host (a name, also with non-ASCII letters, an IPv4 address, or `[IPv6]`) with an optional port, then the end
 * of the authority: the end of the value, a path, query or fragment, whitespace, or a character that closes the URL
 * inside a longer text (a quote, a comma, a bracket, a backslash of an escaped string).
 */
const HOST = String.raw`(?:\[[0-9a-f:.]+\]|[^\s/?#@:"',;()<>[\]{}\\]+)(?::\d{1,5})?(?=$|[/?#\s"',;)\]}>\\])`;

/** Characters before a scheme-less `user:password@host` that start a word: not the middle of a path or a word. */
const WORD_START = String.raw`(?:^|[\s=,;"'(<\[{])`;

/**
 * Keys of a key/value pair that name a secret (a password or passphrase, a secret, an API, private or storage account key,
 * a shared access key or signature of an Azure connection string, a token, `_auth`).
 */
const SECRET_KEY = String.raw`(?:passw(?:or)?d|pwd|passphrase|secret|client[_-]?secret|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|account[_-]?key|shared[_-]?access[_-]?(?:key|signature)|(?:access|refresh|auth)[_-]?token|token|_auth)`;

/**
 * More token formats, each as its issuer documents or its tokens show it (a fixed prefix, then the random part):
 * GitLab's other tokens (`gldt-` deploy, `glrt-` runner, `glptt-` pipeline trigger, `glft-` feed, `glimt-`, `gloas-`,
 * `glsoat-`, `glcbt-` CI job, `glffct-`, `glagent-`, `GR1348941` runner registration), Slack app-level `xapp-`, PyPI
 * `pypi-Ag...` (a macaroon), HashiCorp Vault `hvs.` `hvb.` `hvr.` (service, batch, recovery; the legacy `s.` `b.` `r.`
 * are {@link VAULT_LEGACY_TOKEN}), Hugging Face `hf_` and `api_org_`, Twilio API keys `SK` + 32 hex,
 * SendGrid `SG.<22>.<43>`, Shopify `shpat_ shpca_ shppa_ shpss_`, DigitalOcean `dop_v1_ doo_v1_ dor_v1_`, Doppler
 * `dp.pt. dp.st. dp.sa. dp.ct. dp.scim. dp.audit.` (a service token with its config's name: `dp.st.dev.`), Stripe webhook secrets `whsec_`, Google OAuth client secrets
 * `GOCSPX-` and access tokens `ya29.`, Docker Hub `dckr_pat_`, Grafana `glc_ glsa_`, Sentry `sntrys_ sntryu_`,
 * Tailscale `tskey-`, Atlassian `ATATT3`, Linear `lin_api_`, Postman `PMAK-`, Databricks `dapi`, Supabase `sbp_`,
 * Pulumi `pul-`, Terraform Cloud `.atlasv1.`, a Telegram bot token `<bot id>:AA...`, Groq `gsk_`, Replicate `r8_`,
 * xAI `xai-`, Mailgun `key-` + 32 hex, Mailchimp `<32 hex>-us<n>`, New Relic `NRAK-`, Square `sq0atp- sq0csp-`,
 * PlanetScale `pscale_tkn_ pscale_pw_ pscale_oauth_`, 1Password service accounts `ops_eyJ`, Figma `figd_`, Buildkite
 * `bkua_`, CircleCI `CCIPAT_`, Fly.io `fo1_ fm1_ fm2_`, Notion `ntn_`, JFrog `AKCp` and `cmVmdGtuOjAx` (`reftkn:01`),
 * Heroku API keys `HRKU-AA` + 58 (the current form, as gitleaks' `heroku-api-key-v2` rule and GitLab's Heroku validity
 * check, https://gitlab.com/gitlab-org/gitlab/-/merge_requests/248117, take it) and `HRKU-` + a UUID (the form
 * SonarSource's rule S7006 takes; no Heroku page in reach documents either length).
 * Case-sensitive, at the start of a word, and (for the fixed lengths) not followed by a letter or digit.
 */
const MORE_TOKENS: readonly string[] = [
  String.raw`pypi-Ag[A-Za-z0-9_-]{50,}`,
  String.raw`hv[sbr]\.[A-Za-z0-9_-]{24,}`,
  String.raw`hf_[A-Za-z0-9]{30,}`,
  String.raw`api_org_[A-Za-z0-9]{30,}`,
  String.raw`SK[0-9a-f]{32}`,
  String.raw`SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`,
  String.raw`shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`,
  String.raw`do[opr]_v1_[a-f0-9]{64}`,
  String.raw`dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,}`,
  String.raw`whsec_[A-Za-z0-9+/=]{24,}`,
  String.raw`GOCSPX-[A-Za-z0-9_-]{20,}`,
  String.raw`ya29\.[A-Za-z0-9_-]{20,}`,
  String.raw`dckr_pat_[A-Za-z0-9_-]{20,}`,
  String.raw`gl(?:c|sa)_[A-Za-z0-9_=+/-]{32,}`,
  String.raw`sntry[su]_[A-Za-z0-9_=+/-]{30,}`,
  String.raw`tskey-[a-z]+-[A-Za-z0-9_-]{10,}`,
  String.raw`ATATT3[A-Za-z0-9_=-]{20,}`,
  String.raw`lin_api_[A-Za-z0-9]{30,}`,
  String.raw`PMAK-[0-9a-f]{24}-[0-9a-f]{34}`,
  String.raw`dapi[0-9a-f]{32}(?:-\d)?`,
  String.raw`sbp_[0-9a-f]{40}`,
  String.raw`pul-[0-9a-f]{40}`,
  String.raw`[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}`,
  String.raw`\d{8,10}:AA[A-Za-z0-9_-]{33}`,
  String.raw`gsk_[A-Za-z0-9]{40,}`,
  String.raw`r8_[A-Za-z0-9]{30,}`,
  String.raw`xai-[A-Za-z0-9]{40,}`,
  String.raw`key-[0-9a-f]{32}`,
  String.raw`[0-9a-f]{32}-us\d{1,2}`,
  String.raw`NRAK-[A-Z0-9]{27}`,
  String.raw`sq0(?:atp|csp)-[A-Za-z0-9_-]{20,}`,
  String.raw`pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{30,}`,
  String.raw`ops_eyJ[A-Za-z0-9_-]{20,}`,
  String.raw`figd_[A-Za-z0-9_-]{30,}`,
  String.raw`bkua_[a-f0-9]{40}`,
  String.raw`CCIPAT_[A-Za-z0-9_]{20,}`,
  String.raw`fo1_[A-Za-z0-9_-]{30,}`,
  String.raw`fm[12][ar]?_[A-Za-z0-9+/=_-]{30,}`,
  String.raw`ntn_[A-Za-z0-9]{40,}`,
  String.raw`AKCp[A-Za-z0-9]{69}`,
  String.raw`cmVmdGtuOjAx[A-Za-z0-9]{40,}`,
  String.raw`HRKU-(?:AA[A-Za-z0-9_-]{58}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})`,
];

/**
 * HashiCorp Vault's tokens before 1.10 (and after it with `VAULT_DISABLE_SERVER_SIDE_CONSISTENT_TOKENS`): a service
 * token `s.`, a recovery token `r.`, a batch token `b.` ("Service tokens start with s. and batch tokens start with b.",
 * https://developer.hashicorp.com/vault/docs/upgrading/upgrade-to-1.0.0; the prefixes are Vault's
 * `sdk/helper/consts/token_consts.go`). Vault's docs call a token's structure opaque and undocumented, so the rest is
 * its source's and its tokens': a service or recovery token's random part is `base62.Random(TokenLength)` (Vault's
 * recovery token code), 24 characters as tokens show it and secret scanners' rules take it (`s.OZZFOsivUeOMeDyFtRz7cOmE`),
 * in a namespace followed by `.<namespace id>`; a batch token is
 * the base64url (no padding) of the encrypted entry, whose first 4 bytes are the keyring's term (a small number:
 * `AAAA`), 60 characters or more. Since `s.` and `r.` are short prefixes, the match also needs: no letter, digit, `_`,
 * `.` or `-` before (`items.s.`, `foo-s.` are no token's start), exactly 24 characters, and one of them an upper-case
 * letter or a digit (a lower-case word or host name is not; a random token is all
 * lower-case once in 10^9). The cost: a 24-character CamelCase identifier after `s.` at a word's start is taken.
 */
const VAULT_LEGACY_TOKEN = String.raw`(?:^|[^A-Za-z0-9_.-])(?:[sr]\.(?=[a-z]{0,23}[A-Z0-9])[A-Za-z0-9]{24}|b\.AAAA[A-Za-z0-9_-]{60,})(?![A-Za-z0-9])`;

/**
 * Webhook URLs whose path (or a key in it) is the credential: anyone who has one posts as the integration. Slack
 * (`hooks.slack.com/services/T…/B…/<secret>`, also `workflows/`, `triggers/`), Discord (`discord.com/api/webhooks/<id>/
 * <token>`, also `discordapp.com`, `ptb.`, `canary.`, a versioned `api/v10/`), Microsoft Teams (`<tenant>.webhook.office
 * .com/webhookb2/…`, `outlook.office.com/webhook/…`), Zapier (`hooks.zapier.com/hooks/catch/<id>/<key>`), IFTTT
 * (`maker.ifttt.com/trigger/<event>/with/key/<key>`), Telegram (`api.telegram.org/bot<token>`). Matched by host and
 * path with a first character of the secret part, so the bare host or `hooks.slack.com/services/` is not.
 */
const WEBHOOKS: readonly string[] = [
  String.raw`hooks\.slack\.com\/(?:services|workflows|triggers)\/[a-z0-9]+\/[a-z0-9]`,
  String.raw`(?:(?:ptb|canary)\.)?discord(?:app)?\.com\/api\/(?:v\d+\/)?webhooks\/\d+\/[a-z0-9_-]`,
  String.raw`[a-z0-9-]+\.webhook\.office\.com\/webhookb2\/[0-9a-f]`,
  String.raw`outlook\.office(?:365)?\.com\/webhook\/[0-9a-f]`,
  String.raw`hooks\.zapier\.com\/hooks\/catch\/\d+\/[a-z0-9]`,
  String.raw`maker\.ifttt\.com\/(?:trigger\/[^\s/]+\/with\/)?key\/[a-z0-9_-]`,
  String.raw`api\.telegram\.org\/(?:file\/)?bot\d+:[a-z0-9_-]`,
];

/**
 * The patterns of a secret value, each tested anywhere in the value (so a URL inside `--proxy=http://u:p@h`, a
 * JSON text or a command line counts):
 * - a URL with a password in its userinfo, `scheme://user:password@host` (`DATABASE_URL`, `REDIS_URL`, a proxy):
 *   the password may hold `/ ? # @` and spaces, unencoded, as SQLAlchemy's `make_url` reads one (its password is
 *   `[^@]*` up to the last `@`); a `%40`-encoded `@` is any other character; users up to 256 and passwords up to
 *   512 characters (bounds that keep each test linear in the value's length; a longer password is a token that
 *   the token rules below match, or is missed); not when the "password" starts as a port and a path
 *   (`http://localhost:4873/@scope/pkg`, see `isPortThenPath`);
 * - a scheme-less `user:password@host[:port]` at the start of a word (`http_proxy=alice:pw@proxy:3128`: curl, wget,
 *   pip and git take a proxy without a scheme as `http://`); its password holds no `/`, which would end the
 *   authority in every client;
 * - a private key: PEM or OpenPGP armor (`-----BEGIN ... PRIVATE KEY-----`, `... PRIVATE KEY BLOCK-----`, also
 *   SSH2's `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`, any case, also with escaped `\n` line breaks), a PuTTY
 *   key file (`PuTTY-User-Key-File-3:`), an age identity (`AGE-SECRET-KEY-1`);
 * - an HTTP credential header anywhere in the value, any case (`Authorization:`, `Proxy-Authorization:`,
 *   `Private-Token:` (GitLab), `X-Api-Key:`, `X-Auth-Token:`), as git's `http.extraheader` carries a CI token, and
 *   `Bearer <16 or more token characters>`; the bare word `bearer` in prose is not enough; a bare `Basic <base64 of
 *   user:password>` is found by `hasBasicCredential` (it needs a decoding, no pattern here);
 * - `.netrc` text: `machine <host> ... password <p>` (within 1,000 characters), `default login <u> password <p>`;
 * - a key/value pair whose key names a secret with a non-empty value: `password=`, `Pwd=` (an ADO.NET connection
 *   string), `"password": "..."` (JSON, also with its quotes backslash-escaped inside another string), `password:
 *   x` (YAML), `<password>x</password>` (XML), `secret`, `client_secret`, `api_key`, `access_key`, `secret_key`,
 *   `private_key`, `access_token`, `refresh_token`, `auth_token`, `token`, `passphrase`, an Azure connection
 *   string's `AccountKey=`, `SharedAccessKey=` and `SharedAccessSignature=` (`AZURE_STORAGE_CONNECTION_STRING`,
 *   `AzureWebJobsStorage`, Service Bus), npm's `_auth=`/`_authToken=`, and Docker's `"auth": "<base64>"`, any case;
 *   `password-file=`, `token_url=` or `SharedAccessKeyName=` is not such a key;
 * - a well-known token format, case-sensitive as its issuer writes it (a token's prefix is fixed, so another case
 *   is no token): GitHub `ghp_ gho_ ghu_ ghs_ ghr_` + 36 and `github_pat_`; GitLab `glpat-`; Slack `xoxa- xoxb-
 *   xoxp- xoxr- xoxs-`; npm `npm_` + 36; AWS access key ids `AKIA`/`ASIA` + 16 (not secret alone, but half of a
 *   credential and the account's name: a person would keep it out); Google API keys `AIza` + 35; Anthropic
 *   `sk-ant-`; OpenAI `sk-` + 20 or more (`sk-proj-...`); Stripe `sk_live_ rk_live_ sk_test_ rk_test_`; a JWT
 *   (`eyJ<header>.eyJ<payload>.<signature>`, both parts base64url of a JSON object, as every JWT's are); more
 *   GitLab (`gldt-`, `glrt-`, ...) and Slack (`xoxe-`, `xapp-`) tokens, AWS `ABIA`, and the formats of
 *   {@link MORE_TOKENS}, and Vault's legacy `s.` `r.` `b.` tokens ({@link VAULT_LEGACY_TOKEN}). Each must start a word,
 *   so `task-...` is not an `sk-` key;
 * - a signed URL's signature, whose query is the credential: `sig=` (an Azure SAS URL), `Signature=` (CloudFront),
 *   `X-Amz-Signature=`, `X-Goog-Signature=`, with at least 16 characters, after `?`, `&` or `;`;
 * - a webhook URL whose path is the secret ({@link WEBHOOKS}: Slack, Discord, Teams, Zapier, IFTTT, Telegram).
 */
export const SECRET_VALUE_PATTERNS: readonly RegExp[] = Object.freeze([
  new RegExp(String.raw`${SCHEME}[^\s/?#@:]{0,256}:[^\r\n]{0,512}?@${HOST}`, 'i'),
  new RegExp(String.raw`${WORD_START}[^\s/?#@:=,;"'(<\[{]{1,256}:[^\s/]{1,512}?@${HOST}`, 'i'),
  /-{3,5}\s*BEGIN\s[A-Z0-9 ]{0,40}PRIVATE\s+KEY/i,
  /PuTTY-User-Key-File-\d+\s*:/i,
  /AGE-SECRET-KEY-1[0-9A-Z]{20,}/i,
  /(?:^|[^a-z0-9-])(?:proxy-)?(?:authorization|private-token|x-api-key|x-auth-token)\s*[:=]\s*\S/i,
  /(?:^|[^a-z0-9])bearer\s+[a-z0-9._~+/-]{16,}/i,
  /(?:^|\s)machine\s+\S+\s[\s\S]{0,1000}?\bpassword\s+\S/i,
  /(?:^|\s)default\s+login\s+\S+\s+password\s+\S/i,
  new RegExp(String.raw`(?:^|[^a-z0-9])${SECRET_KEY}(?:\\?["'])?\s*[=:]\s*(?:\\?["'])?(?!["'\s,;&}\\]|$)`, 'i'),
  new RegExp(String.raw`<${SECRET_KEY}>\s*[^<\s]`, 'i'),
  /\\?"auth\\?"\s*:\s*\\?"[^"\s\\]{8,}/i,
  /(?:^|[^A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,}|gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|ffct|agent)-[A-Za-z0-9_-]{20,}|GR1348941[A-Za-z0-9_-]{20,}|xox[abeprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})/,
  /(?:^|[^A-Za-z0-9_])(?:npm_[A-Za-z0-9]{36}|(?:AKIA|ASIA|ABIA)[A-Z0-9]{16}|AIza[0-9A-Za-z_-]{35}|sk-ant-[A-Za-z0-9_-]{20,})(?![A-Za-z0-9])/,
  /(?:^|[^A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,})/,
  /(?:^|[^A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*/,
  new RegExp(String.raw`(?:^|[^A-Za-z0-9_])(?:${MORE_TOKENS.join('|')})(?![A-Za-z0-9])`),
  new RegExp(VAULT_LEGACY_TOKEN),
  /[?&;](?:sig|signature|x-amz-signature|x-goog-signature)=[^&\s#"']{16,}/i,
  new RegExp(String.raw`(?:^|[^a-z0-9.-])(?:${WEBHOOKS.join('|')})`, 'i'),
]);

/** The user of a URL's userinfo with no password, `scheme://<user>@host`, captured. */
const URL_USER_ONLY = new RegExp(String.raw`${SCHEME}([^\s/?#@:]{1,256})@${HOST}`, 'gi');

/**
 * Scheme-less `user:password@host` whose "user" is a URI scheme that takes no `//` (`mailto:alice@example.com`,
 * `sip:`, `tel:`, npm's alias `npm:pkg@1.2.3`): an address or a package, not a credential. With a second colon
 * before the `@` (`sip:alice:pw@host`) it is a password again.
 */
const NOT_A_USER = /^(?:[\s=,;"'(<[{])?(?:mailto|sip|sips|tel|xmpp|im|pres|news|npm|urn):[^\s:@]*@/i;

/**
 * Whether a URL's user with no password is a token rather than a login name (`https://<token>@github.com/o/r`:
 * GitHub and GitLab take a token as the user alone). A token: one of the well-known formats, or at least 20
 * characters of letters, digits, `_` and `-` holding both a letter and a digit (a 40-hex GitHub classic token, a
 * UUID, an Azure DevOps PAT). A name: anything else (`git` of `ssh://git@host`, `alice`, `first.last`, an
 * e-mail address `%40`-encoded, `deploy-bot`).
 */
function isTokenUser(encoded: string): boolean {
  let user = encoded;
  try {
    user = decodeURIComponent(encoded);
  } catch {
    // A stray `%` is a character of the name as written.
  }
  if (SECRET_VALUE_PATTERNS.some((re) => re.test(user))) return true;
  return user.length >= 20 && /^[A-Za-z0-9_-]+$/.test(user) && /[A-Za-z]/.test(user) && /\d/.test(user);
}

/**
 * Whether a match of the URL-with-password pattern is rather `host:port` followed by a path or a space that holds
 * an `@` later (`http://localhost:4873/@scope/pkg`, `-Dproxy=http://proxy:3128 -Dmail=ops@example.com`): the
 * "password" starts with 1 to 5 digits and then `/`, `?`, `#` or whitespace. The cost: a real password that
 * starts so (`app:1234/x@db`) is missed.
 */
function isPortThenPath(match: string): boolean {
  const afterScheme = match.slice(match.indexOf('//') + 2);
  const password = afterScheme.slice(afterScheme.indexOf(':') + 1);
  return /^\d{1,5}[/?#\s]/.test(password);
}

/**
 * An HTTP Basic credential without its header name: the word `Basic` (any case, at the start of a word), whitespace,
 * and a base64 run (RFC 7617 section 2: `Basic <base64 of user-id ":" password>`; base64url letters are read too).
 */
const BASIC_CREDENTIAL = /(?:^|[^A-Za-z0-9_-])basic\s+([A-Za-z0-9+/_-]{4,}={0,2})(?![A-Za-z0-9+/_=-])/gi;

/**
 * Whether `text` holds `Basic <base64>` ({@link BASIC_CREDENTIAL}) whose base64 decodes (as UTF-8) to printable text
 * with a `:`, the user-id and password of RFC 7617 (either may be empty: Heroku's `:<token>`, Stripe's `<key>:`; a
 * password may hold more colons). Not: the word `basic` before other words (`basic usage`, `Basic English`: they
 * decode to bytes that are no text), or before the base64 of text with no colon (`Basic SGVsbG8gd29ybGQ=`, `Hello
 * world`). Linear: the matches do not overlap and each is decoded once.
 */
function hasBasicCredential(text: string): boolean {
  for (const m of text.matchAll(BASIC_CREDENTIAL)) {
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    if (decoded.length >= 2 && /^[^\x00-\x1f\x7f\ufffd:]*:[^\x00-\x1f\x7f\ufffd]*$/.test(decoded)) return true;
  }
  return false;
}

/** Whether `text` (one form of a value) matches a rule, but for the exceptions `isPortThenPath` and `NOT_A_USER`. */
function matchesShape(text: string): boolean {
  const [urlPassword, schemeless, ...rest] = SECRET_VALUE_PATTERNS;
  // After a match that is an exception, look again from its next character: a later URL in the same value
  // (`-Dproxy=http://proxy:3128 -Ddb=postgres://app:pw@db/app`) must not hide inside the excepted one.
  const anyMatch = (pattern: RegExp, except: (match: string) => boolean): boolean => {
    const re = new RegExp(pattern.source, `${pattern.flags}g`);
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (!except(m[0])) return true;
      re.lastIndex = m.index + 1;
    }
    return false;
  };
  if (anyMatch(urlPassword!, isPortThenPath) || anyMatch(schemeless!, (m) => NOT_A_USER.test(m))) return true;
  if (rest.some((re) => re.test(text)) || hasBasicCredential(text)) return true;
  for (const m of text.matchAll(URL_USER_ONLY)) if (isTokenUser(m[1]!)) return true;
  return false;
}

/** Runs of base64 or base64url text long enough to hold a key or a URL with a password (24 characters, 18 bytes). */
const BASE64_RUN = /[A-Za-z0-9+/_-]{24,}={0,2}/g;

/**
 * Whether `der` starts as an unencrypted private key in DER (what a PEM body is, base64'd with no armor line:
 * `MIIEvQIBADAN...`, `MC4CAQAwBQYDK2Vw...`, `MHcCAQEEI...`): a SEQUENCE whose first element is the INTEGER 0 or 1
 * (the version) followed by a SEQUENCE (PKCS#8's algorithm, RFC 5208/5958), an INTEGER (PKCS#1's RSA modulus,
 * RFC 8017) or an OCTET STRING (SEC1's EC key, RFC 5915). A certificate, a public key (SPKI) or an encrypted
 * PKCS#8 key starts with a SEQUENCE inside instead, and is not matched.
 */
function isDerPrivateKey(der: Buffer): boolean {
  if (der.length < 8 || der[0] !== 0x30) return false;
  const lengthBytes = der[1]! < 0x80 ? 0 : der[1]! - 0x80;
  if (lengthBytes > 3) return false;
  const at = 2 + lengthBytes;
  return der[at] === 0x02 && der[at + 1] === 0x01 && der[at + 2]! <= 0x01 && [0x30, 0x02, 0x04].includes(der[at + 3]!);
}

/**
 * The texts a value stands for besides itself: its percent-decoding when it holds `%XX` (a URL passed inside a
 * query), and the decoding of each base64 run in it that gives printable text (a PEM private key base64-wrapped
 * into one line, the usual CI and Kubernetes form, `LS0tLS1CRUdJTi...`; a base64'd `Authorization:` header or
 * URL), read from each of its first four characters. One level: base64 inside base64 is not opened. `derKey`:
 * some run decodes to a DER private key ({@link isDerPrivateKey}).
 */
function decodedForms(value: string): { texts: string[]; derKey: boolean } {
  const texts: string[] = [];
  let derKey = false;
  if (/%[0-9a-f]{2}/i.test(value)) {
    try {
      texts.push(decodeURIComponent(value));
    } catch {
      texts.push(value.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))));
    }
  }
  // Each of the four alignments: the run may start with characters that belong to no base64 text (`xLS0tLS1...`).
  for (const run of value.match(BASE64_RUN) ?? [])
    for (let skip = 0; skip < 4; skip++) {
      const bytes = Buffer.from(run.slice(skip), 'base64');
      const text = bytes.toString('latin1');
      const printable = text.replace(/[^\x20-\x7e\t\r\n]/g, '').length;
      if (printable >= text.length * 0.9) texts.push(text);
      derKey ||= isDerPrivateKey(bytes);
    }
  return { texts, derKey };
}

/**
 * Whether a variable's value is a secret by its shape, whatever its name: it, its percent-decoding or a base64 run
 * in it decoded matches one of {@link SECRET_VALUE_PATTERNS}, it holds a URL whose user alone is a token
 * (`https://ghp_...@github.com/o/r`; see `isTokenUser`), or a base64 run in it is a DER private key with no armor
 * (see `isDerPrivateKey`). Mixed case, surrounding whitespace and a URL inside a longer value (`--proxy=http://u:p@h`,
 * JSON) count.
 *
 * Decisions, each for values a person would recognise as credentials without breaking ordinary sessions:
 * - Well-known token prefixes: caught (list at {@link SECRET_VALUE_PATTERNS}), case-sensitive and at the start of a
 *   word, with their issuers' lengths, so that words such as `task-...` or `sk-1` stay.
 * - `Authorization:`/`Bearer`/`Basic <base64 of user:password>` and `.netrc` text anywhere in a value: caught; so
 *   git's `http.extraheader` token in `GIT_CONFIG_VALUE_n` or `GIT_CONFIG_PARAMETERS` is a secret (env.ts also drops
 *   git's command-scope config); a `Bearer` token under 16 characters is not (`Bearer abc` in prose).
 * - A PEM private key with literal `\n` escapes: caught (the armor line is matched, not the line breaks).
 * - `user@host` with no password (an e-mail address, `git@github.com:o/r.git`, `ssh://git@host`): not a secret; a
 *   URL's user alone is one only when it is token-shaped.
 * - Left to the session as no secret: `PATH`-like lists (no entry starts a word and holds `:...@host`), `LS_COLORS`,
 *   certificates and public keys (armored or DER), a container image's digest (`node:18@sha256:...`: no port of
 *   digits), `mailto:`/`npm:` forms, `--password-file=`, an empty `"password": ""`.
 * - Missed, by design: a random string under an innocent name (no shape to see: list the name in
 *   `AGENT_JOBS_SECRET_ENV`), a URL password that starts as a port (`app:1234/x@db`), one over 512 characters,
 *   base64 inside base64, a token in a format not listed; a JSON value with a literal `null` is taken as set.
 * - A value removed here but shorter than 8 characters (`a:b@h:1`) is not redacted from outputs: too short to
 *   replace without noise, and it never reaches the session's environment.
 * Pure; `value` may be any text (an empty string is no secret).
 */
export function isSecretEnvValue(value: string): boolean {
  if (value.length === 0) return false;
  if (matchesShape(value)) return true;
  const decoded = decodedForms(value);
  return decoded.derKey || decoded.texts.some(matchesShape);
}
