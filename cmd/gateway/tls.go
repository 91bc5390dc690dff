package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The upstream's (and the PostgreSQL store's) trust store. Go's crypto/x509 reads SSL_CERT_FILE and
// SSL_CERT_DIR from the process environment once, at its first use, so a value
// written in --env-file would never reach it. The gateway builds the pool
// itself from the configuration instead: when either is set (in the
// environment or the env file), the upstream is trusted exactly for the
// certificates of SSL_CERT_FILE and of the files in the directories of
// SSL_CERT_DIR (a colon list), and for nothing else; when neither is set, the
// system store is used.

// checkTrust refuses a trust setting that cannot give a certificate.
func checkTrust(file, dir string) error {
	if file == "" && dir == "" {
		return nil
	}
	_, err := rootPool(file, dir)
	return err
}

// rootPool is the pool of the trust settings, or nil (the system store) when
// neither is set. Every file is read with readRegular: SSL_CERT_FILE must be a
// regular file of at most maxCertFileBytes; in the directories of SSL_CERT_DIR
// an entry that is not a regular file (a subdirectory, a FIFO, a device) or
// cannot be read is skipped, as crypto/x509 skips it, but one over
// maxCertFileBytes, or files over maxCertDirBytes together, are refused. A
// refusal names the setting and the rule, never a path or the content.
func rootPool(file, dir string) (*x509.CertPool, error) {
	if file == "" && dir == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if file != "" {
		pem, err := readRegular(file, maxCertFileBytes)
		if err != nil {
			return nil, invalid("SSL_CERT_FILE", fileProblem(err))
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, invalid("SSL_CERT_FILE", "holds no PEM certificate")
		}
	}
	if dir != "" {
		found, total := false, 0
		for _, d := range strings.Split(dir, ":") {
			if d == "" {
				continue
			}
			entries, err := os.ReadDir(d)
			if err != nil {
				return nil, invalid("SSL_CERT_DIR", "a directory cannot be read: "+osReason(err))
			}
			for _, e := range entries {
				pem, err := readRegular(filepath.Join(d, e.Name()), min(maxCertFileBytes, maxCertDirBytes-total))
				var tl errTooLarge
				switch {
				case errors.As(err, &tl) && int(tl) < maxCertFileBytes:
					return nil, invalid("SSL_CERT_DIR", fmt.Sprintf("holds files larger than %d bytes together", maxCertDirBytes))
				case errors.As(err, &tl):
					return nil, invalid("SSL_CERT_DIR", "holds a file "+tl.Error())
				case err != nil:
					continue
				}
				total += len(pem)
				if pool.AppendCertsFromPEM(pem) {
					found = true
				}
			}
		}
		if !found {
			return nil, invalid("SSL_CERT_DIR", "holds no PEM certificate")
		}
	}
	return pool, nil
}

// osReason is a file error without its path (the path is the owner's own, but
// a refusal names only the variable and the rule).
func osReason(err error) string {
	switch {
	case os.IsNotExist(err):
		return "no such file or directory"
	case os.IsPermission(err):
		return "permission denied"
	}
	return "not readable"
}
