// Command oidcop runs the tests' OpenID provider (internal/testkit/oidcop: zitadel/oidc's op
// server) on loopback for the browser suite: it prints the issuer URL on its first line of
// output and serves until stdin closes or it is killed. Users: ada (ada-pass, verified email
// ada@corp.test, groups research) and root (root-pass, root@example.com).
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/agentsvc/svc/internal/testkit/oidcop"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	client := flag.String("client", "svc-client", "client id")
	secret := flag.String("secret", "svc-secret", "client secret")
	redirect := flag.String("redirect", "", "redirect URIs, comma-separated")
	flag.Parse()
	if !strings.HasPrefix(*addr, "127.0.0.1:") {
		log.Fatal("oidcop: loopback addresses only")
	}
	op, err := oidcop.Start(oidcop.Options{ClientID: *client, ClientSecret: *secret, RedirectURIs: strings.Split(*redirect, ","), Addr: *addr,
		Users: []oidcop.User{
			{Subject: "sub-ada", Username: "ada", Password: "ada-pass", Email: "ada@corp.test", EmailVerified: true, Name: "Ada Corp", Groups: []string{"research"}},
			{Subject: "sub-root", Username: "root", Password: "root-pass", Email: "root@example.com", EmailVerified: true, Name: "Root"},
		}})
	if err != nil {
		log.Fatal(err)
	}
	defer op.Close()
	fmt.Println(op.URL)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the harness closes stdin
}
