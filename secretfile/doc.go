// Package secretfile decrypts SOPS-encrypted YAML and JSON files in memory
// with age keys (docs/operator.md, "Config in git").
//
// The file format and its MAC are SOPS's own: every encrypted leaf is
// ENC[AES256_GCM,data:…,iv:…,tag:…,type:…] sealed with the file's data key
// and its key path as additional data, the data key is an age file per
// recipient under sops.age (or sops.key_groups with a single group), and
// sops.mac is the SHA-512 of the plaintext leaves in document order,
// sealed with the data key and sops.lastmodified. The package reads that
// format itself, with filippo.io/age (the age library sops uses) and
// go-crypto's openpgp (which the operator links already) for the data key,
// rather than through the github.com/getsops/sops/v3 packages: the ones
// with the format and the MAC (the root package, aes, stores) import its
// key service and so the AWS, Azure, GCP, Vault and Huawei SDKs. Measured
// on the operator's binary (docs/operator.md, "Config in git"): 313 more
// packages initialised at start, 97 MB to 129 MB, and the peak RSS of
// `addon-operator --version` from 50 to 81 MiB. testdata/sopsgen, a module
// of its own, encrypts the fixtures with the sops library and checks, in
// make test, that this package decrypts whatever sops encrypts.
//
// What it reads: one YAML document or one JSON object; the rules
// unencrypted_suffix, encrypted_suffix, unencrypted_regex, encrypted_regex
// and mac_only_encrypted; age recipients and PGP recipients (private
// keys without a passphrase). It refuses, as Malformed, what
// it does not read: the comment rules (encrypted_comment_regex,
// unencrypted_comment_regex), several key groups (Shamir), several YAML
// documents, anchors and aliases. Cloud KMS and Vault recipients are
// named in errors but never tried. Comments are
// not part of the plaintext it returns.
//
// Bounds: input files up to MaxFileSize, at most MaxRecipients recipients,
// each data key envelope up to MaxEnvelopeSize, regexes up to 1 KiB; the
// YAML parser bounds nesting. A Keyring never prints, logs or returns key
// material, and no error carries it.
package secretfile
