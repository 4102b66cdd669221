package builtin

import (
	"errors"
	"github.com/agenthost/agenthost/host"
)

func newDocSearch(*env) (host.Tool, error) { return nil, errors.New("not implemented yet") }
