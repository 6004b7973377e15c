// Command gitea is the Gitea server of code.gitea.io/gitea, built from its Go
// module so that kdrift's tests can open pull requests on a real forge. It is
// Gitea's own main, unchanged but for the version string: the module's
// replace directives (which a `go install pkg@version` refuses) are copied
// into this module's go.mod.
package main

import (
	"os"
	"runtime"
	"time"

	"code.gitea.io/gitea/cmd"
	"code.gitea.io/gitea/modules/log"
	"code.gitea.io/gitea/modules/setting"

	// register supported doc types, as Gitea's main does
	_ "code.gitea.io/gitea/modules/markup/markdown"

	"github.com/urfave/cli/v3"
)

// version is the Gitea release this module requires (see go.mod).
const version = "1.26.0"

func init() {
	setting.AppVer = version
	setting.AppBuiltWith = " built with " + runtime.Version() + " : sqlite, sqlite_unlock_notify"
	setting.AppStartTime = time.Now().UTC()
}

func main() {
	cli.OsExiter = func(code int) {
		log.GetManager().Close()
		os.Exit(code)
	}
	app := cmd.NewMainApp(cmd.AppVersion{Version: version, Extra: setting.AppBuiltWith})
	_ = cmd.RunMainApp(app, os.Args...)
	log.GetManager().Close()
}
