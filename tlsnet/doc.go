// Package tlsnet serves TLS beside plain TCP on one port, as mongod's
// --tlsMode does: the certificate, key and CA pool a server presents, their
// reload without dropping connections, a listener that tells a TLS client
// from a plain one by its first byte, and the subject of a verified client
// certificate in the form MONGODB-X509 names users by.
//
// It stands apart from package server so that the TLS policy (minimum
// version, client certificate rules, what a failed reload keeps) can be read
// and tested alone, with no store or command in the way; it imports nothing
// of Lethe's. The server wraps its listener with Endpoint.Listener and asks
// PeerSubject about a connection; cmd/lethe builds the Endpoint from its
// flags and calls Reload on SIGHUP.
//
// The modes follow mongod's:
//
//	disabled  no TLS; the port serves plain connections only
//	allow     TLS and plain connections are both served (allowTLS)
//	prefer    as allow for incoming connections (preferTLS only changes
//	          what mongod uses for outgoing ones, which Lethe has none of)
//	require   only TLS connections are served; a plain one is closed
//	          (requireTLS)
//
// With a CA file, a client must present a certificate the CA signed, as
// mongod requires unless --tlsAllowConnectionsWithoutCertificates is given;
// Config.AllowConnectionsWithoutCertificates is that flag: a client may then
// present none, but one it presents is still verified. Without a CA file no
// client certificate is asked for.
package tlsnet
