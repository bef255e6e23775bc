package tlsnet

import (
	"errors"
	"fmt"
)

// Mode is how a port treats TLS, as mongod's --tlsMode.
type Mode int

// The modes, in mongod's order.
const (
	Disabled Mode = iota
	Allow
	Prefer
	Require
)

var modeNames = [...]string{Disabled: "disabled", Allow: "allow", Prefer: "prefer", Require: "require"}

// String is the mode as ParseMode reads it.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode reads "disabled", "allow", "prefer" or "require".
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if s == name {
			return Mode(m), nil
		}
	}
	return Disabled, fmt.Errorf("tls mode: want disabled, allow, prefer or require, not %q", s)
}

// Config names the files of a TLS endpoint and its mode.
type Config struct {
	// CertFile and KeyFile hold the server's certificate chain and its
	// private key, PEM encoded.
	CertFile, KeyFile string
	// CAFile, when set, holds the PEM certificates of the authorities
	// client certificates must be signed by; clients must then present one
	// unless AllowConnectionsWithoutCertificates.
	CAFile string
	Mode   Mode
	// AllowConnectionsWithoutCertificates lets clients connect without a
	// certificate when CAFile is set, as mongod's
	// --tlsAllowConnectionsWithoutCertificates; a certificate presented is
	// still verified.
	AllowConnectionsWithoutCertificates bool
}

// Validate checks that the settings make sense together, with messages that
// name what is missing.
func (c Config) Validate() error {
	if c.Mode < Disabled || c.Mode > Require {
		return fmt.Errorf("tls: unknown mode %d", int(c.Mode))
	}
	if c.Mode == Disabled {
		if c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" || c.AllowConnectionsWithoutCertificates {
			return errors.New("tls: certificate files or options given but the TLS mode is disabled; set the mode to allow, prefer or require")
		}
		return nil
	}
	switch {
	case c.CertFile == "" && c.KeyFile == "":
		return fmt.Errorf("tls: mode %s needs a certificate file and a key file", c.Mode)
	case c.CertFile == "":
		return fmt.Errorf("tls: mode %s needs a certificate file beside the key file", c.Mode)
	case c.KeyFile == "":
		return fmt.Errorf("tls: mode %s needs a key file beside the certificate file", c.Mode)
	case c.AllowConnectionsWithoutCertificates && c.CAFile == "":
		return errors.New("tls: allowing connections without certificates means nothing without a CA file: client certificates are only asked for when a CA file is given")
	}
	return nil
}
