// What the result file's /environment never stores. A variable is dropped
// when its name says it holds a credential, or its value looks like one,
// whatever the name: the rule is about what the text is, not a list of
// known variables.
#pragma once

#include <string_view>

namespace gdr {

// Names: any '_'-separated word (or run of words) of the name, in any case,
// that names a credential: TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE, PASS,
// PWD, KEY (APIKEY, PKEY, ...), CRED*, AUTH*, COOKIE, PRIVATE, CERT*,
// SIGNATURE, BEARER, SALT, NONCE, JWT, OTP, PIN, HMAC, TICKET, LOGIN,
// MUNGE, and Open MPI's per-job transport key (OMPI_MCA_*precondition_transports).
bool looks_secret(std::string_view name);

// Values: a parameter inside the value whose key or flag names a credential
// (as looks_secret) and has a value ("x?token=..", "--password=..",
// "--passwd ..", "user=me;pwd=.."); a URL or address with a password (scheme://user:pass@host), an
// HTTP authorization (Bearer/Basic ...), a PEM block (-----BEGIN), the
// shapes of well-known tokens (GitHub ghp_/github_pat_, GitLab glpat-,
// Slack xox?-, AWS AKIA/ASIA, OpenAI sk-, Hugging Face hf_, JWTs eyJ...),
// 32 or more hex digits in one run (a key; GPU and MIG UUIDs excepted), and
// any run of 24 or more letters and digits that mixes upper case, lower case
// and digits (a random token; words, paths and names do not mix all three
// in one long run without a separator).
bool value_looks_secret(std::string_view value);

}  // namespace gdr
