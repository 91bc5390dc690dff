package pgstore_test

import (
	"crypto/x509"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/pgstore"
)

// TestTheGatewaysTrustReachesTheDatabaseConnection: the trust settings of
// the gateway (SSL_CERT_FILE / SSL_CERT_DIR, env file included) are what a
// verifying connection trusts, unless the URL names its own sslrootcert.
func TestTheGatewaysTrustReachesTheDatabaseConnection(t *testing.T) {
	is := is.New(t)
	pool := x509.NewCertPool()
	for _, mode := range []string{"verify-full", "verify-ca"} {
		cfg, err := pgstore.ParseTrust("postgres://u@db.example:5432/x?sslmode="+mode, pgstore.WithRootCAs(pool))
		is.NoErr(err)
		is.True(cfg.ConnConfig.TLSConfig != nil)
		is.True(cfg.ConnConfig.TLSConfig.RootCAs == pool) // exactly the gateway's pool
	}
	cfg, err := pgstore.ParseTrust("postgres://u@db.example:5432/x?sslmode=verify-full", nil...)
	is.NoErr(err)
	is.True(cfg.ConnConfig.TLSConfig.RootCAs == nil) // no setting: Go's system store, as before
}
