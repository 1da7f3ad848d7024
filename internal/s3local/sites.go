package s3local

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/s3err"
)

// SiteAccessPrefix starts the access key of every site account.
const SiteAccessPrefix = "ptopofl-site."

// SiteCredentials are the S3 credentials of site's account on a server
// whose root secret is rootSecret: the access key is SiteAccessPrefix+site
// and the secret an HMAC-SHA256 of the site name under the root secret.
//
// Deriving them, instead of storing accounts, is what lets sites join on
// demand: a site name first heard of when its worker starts already has an
// account, with no admin call and no account file shared between the
// processes of the local stack, and only a holder of the root secret can
// compute it. What an account may touch is up to the bucket policy: a site
// account the policy does not name is denied everything. Rotating the
// root secret rotates every site's secret.
func SiteCredentials(rootSecret, site string) (accessKey, secretKey string) {
	m := hmac.New(sha256.New, []byte(rootSecret))
	m.Write([]byte("ptopofl s3local site account\x00" + site))
	return SiteAccessPrefix + site, hex.EncodeToString(m.Sum(nil))[:40]
}

// validSiteName is the site name rule of the rest of ptopofl (package
// artifact): 1 to 64 characters of [A-Za-z0-9._-].
func validSiteName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// siteIAM is versitygw's account lookup for the local stack: the root
// account (admin) and one derived user account per site name.
type siteIAM struct {
	root auth.Account
}

var _ auth.IAMService = siteIAM{}

func (i siteIAM) GetUserAccount(access string) (auth.Account, error) {
	if access == i.root.Access {
		return i.root, nil
	}
	if site, ok := strings.CutPrefix(access, SiteAccessPrefix); ok && validSiteName(site) {
		_, secret := SiteCredentials(i.root.Secret, site)
		return auth.Account{Access: access, Secret: secret, Role: auth.RoleUser}, nil
	}
	return auth.Account{}, s3err.GetAPIError(s3err.ErrAdminUserNotFound)
}

// ResolveAccounts returns the access keys that name no account; versitygw
// calls it to check the principals of a bucket policy.
func (i siteIAM) ResolveAccounts(accessKeyIDs []string) ([]string, error) {
	missing := []string{}
	for _, a := range accessKeyIDs {
		if _, err := i.GetUserAccount(a); err != nil {
			missing = append(missing, a)
		}
	}
	return missing, nil
}

// The accounts are derived, not stored: none can be created, changed,
// deleted or listed.
func (siteIAM) CreateAccount(auth.Account) error {
	return s3err.GetAPIError(s3err.ErrAdminMethodNotSupported)
}

func (siteIAM) UpdateUserAccount(string, auth.MutableProps) error {
	return s3err.GetAPIError(s3err.ErrAdminMethodNotSupported)
}

func (siteIAM) DeleteUserAccount(string) error {
	return s3err.GetAPIError(s3err.ErrAdminMethodNotSupported)
}

func (siteIAM) ListUserAccounts() ([]auth.Account, error) {
	return []auth.Account{}, s3err.GetAPIError(s3err.ErrAdminMethodNotSupported)
}

func (siteIAM) Shutdown() error { return nil }
