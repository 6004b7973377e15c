// Package actions records a person's actions (freeze, unfreeze, extend,
// ignore, revert) as Git commits on the App files, pushes them, and reads
// them back as an audit log and per-app history. Every Git operation goes
// through go-git.
//
// # Commits
//
// Each action is one commit whose author and committer are the person
// (RepoOptions.Author, then KDRIFT_AUTHOR, then git config user.name and
// user.email). The message is:
//
//	ACTION(APP[,APP...] | N apps): first line of the reason
//
//	the full reason
//
//	Kdrift-Action: freeze | unfreeze | extend | ignore | revert
//	Kdrift-App: APP            (one per app)
//	Kdrift-Until: RFC3339      (freeze and extend with an end time)
//	Kdrift-Revert-Of: SHA      (revert)
//
// A revert's subject is `Revert "<original subject>"` and its body starts
// with `This reverts commit <sha>.`, as git writes it.
//
// # Edits
//
// App files are edited as text, whole lines at a time, at places found by
// parsing them with yaml.v3: comments, key order and layout of everything
// else stay byte for byte, and freeze followed by unfreeze gives the
// original file back.
//
// # Working tree, pushing, races
//
// When the branch is checked out, the files a commit changes are written to
// the working tree and index too, but only when they are clean; otherwise
// the action is refused (*DirtyError) and nothing is committed. After
// committing, kdrift pushes to the branch's upstream (never forced). A
// rejected push means fetch, run the same operation again on the new head
// and push again, up to RepoOptions.MaxPushTries. An unreachable remote
// keeps the commit local (Result.PushError); Repo.Push or the next action
// pushes it, re-applying kdrift's own unpushed commits on a newer upstream.
// A person's own unpushed commits are never published by kdrift.
//
// Refs, the index and config are written through git's own lock files
// (internal/gitfs), so a git command run beside kdrift never reads a
// half-written file and neither side loses the other's update: a lock git
// holds past a second fails the action with a *gitfs.LockedError, and nothing
// is committed.
package actions
