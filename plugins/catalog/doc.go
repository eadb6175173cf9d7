// Package catalog reads the plugin catalog (plugin_catalog_url), downloads and verifies package
// archives, and installs, updates and uninstalls packages in the plugins directory.
//
// # Catalog document
//
// The catalog is one JSON document:
//
//	{"packages": [
//	  {"package": "acme/weather",
//	   "name": "Weather",
//	   "description": "Forecasts for agents",
//	   "versions": [
//	     {"version": "1.2.0",
//	      "url": "https://plugins.example.com/acme-weather-1.2.0.tar.gz",
//	      "sha256": "<64 hexadecimal digits>",
//	      "requires": ["acme/geo"]}
//	   ]}
//	]}
//
// The fields:
//
//   - package: vendor/name, each part lowercase letters, digits, '.', '_' and '-', starting and
//     ending with a letter or digit (^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?/ the same $); unique.
//   - name, description: display text (at most 200 and 2000 bytes), optional.
//   - versions: at least one; version is semver-like (1, 1.2, 1.2.3, optional leading v,
//     -pre.release and +build as in semver.org), unique by precedence (1.2 and 1.2.0 are the
//     same version); url is an absolute https URL (plain http only to a loopback host)
//     without credentials of a .tar.gz or .zip archive (the format is detected from the
//     content); sha256 is the archive's digest; requires lists packages that must already be
//     installed.
//
// Unknown keys are ignored. A document with any invalid entry is refused as a whole
// (svcerr.ErrInvalid naming the entry and the rule), and the previous cached copy stays in use.
// The latest version of a package is the highest by semantic-version precedence
// (CompareVersions), pre-releases included.
//
// # Transport and signatures
//
// The index, its signature, the archives and every redirect between them are fetched over
// https; plain http is accepted only to a loopback host (localhost, 127.0.0.0/8, ::1: the
// development exception, netguard.LoopbackHost), and any other http URL is refused before a
// request is made (svcerr.ErrInvalid). Over plain http a network attacker could replace the
// index, and with it the digest every archive is checked against.
//
// With Options.PublicKey set (plugin_catalog_public_key), the catalog is signed: next to the
// index at U lives its detached signature at U with ".sig" appended to the path (the query
// kept), a text document holding the standard base64 of the ed25519 signature of the exact
// index bytes (surrounding whitespace ignored, at most 1 KiB). The index is verified before it
// is parsed; a missing, garbled or failing signature refuses the catalog like an invalid
// document (no cached copy: ErrUnavailable; else the cached copy, itself verified again with
// the current key, is served stale). The archives' sha256 then come from a signed document.
// docs/integrators.md shows publishers how to sign.
//
// # What the server wires
//
// A Client (New) needs the catalog URL, an *http.Client built by netguard.Client (so the
// catalog, the archives and their redirects pass the outbound screen, or an administrator's
// exemption), a cache directory and plugin_catalog_ttl. GET /plugins/catalog calls
// Client.Index and reports Snapshot.Stale (logging FetchErr and CacheErr).
//
// An Installer (NewInstaller) needs the plugins directory, the Client and a Check hook that
// runs the manifest loader on the unpacked folder; the server calls CleanStaging at startup and
// reloads the plugin after Install, Update or Uninstall succeed. Plugin loaders must skip
// folders whose name starts with a dot (the staging area lives in <plugins dir>/.staging).
//
// The Installer lives in this package rather than a third one: it is the only user of the
// Client's lookup and download, its refusals speak about catalog entries (versions,
// requirements), and the server wires both together from the same settings, so one package
// keeps the API to a Client and an Installer. The unpacking rules, which have nothing to do
// with catalogs, are in package plugins/archive.
//
// # Errors
//
// Every error a caller should show belongs to an internal/vocab/svcerr category: ErrInvalid (a
// refused name, document, archive or manifest; a checksum mismatch), ErrNotFound (a package or
// version absent from the catalog, a package not installed), ErrConflict (already installed,
// missing requirements, required by another package) and ErrUnavailable (the catalog or an
// archive cannot be downloaded). Other errors are local I/O failures.
package catalog
