package main

import "errors"

// TODO(owner): replace this stub with the real command in its own file.
func runTokenCreate(e *env, args []string) error { return errors.New("not implemented yet") }
