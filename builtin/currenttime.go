package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	// The time zone database is compiled in, so current_time knows every IANA zone even where the system has no
	// zoneinfo (scratch containers, Windows).
	_ "time/tzdata"

	"github.com/agenthost/agenthost/host"
)

// currentTime is the current_time tool: the date, time and weekday in a time zone.
type currentTime struct {
	env *env
	// localName names the local zone in results ("Local" says little to a model).
	localName string
}

func newCurrentTime(e *env) host.Tool {
	return &currentTime{env: e, localName: localZoneName()}
}

var (
	currentTimeInput = json.RawMessage(`{"type":"object","properties":{"timezone":{"type":"string",` +
		`"description":"IANA time zone, e.g. Asia/Tokyo; default the local zone"}}}`)
	currentTimeOutput = json.RawMessage(`{"type":"object","properties":{` +
		`"time":{"type":"string","format":"date-time","description":"RFC 3339 time with the zone's offset"},` +
		`"timezone":{"type":"string","description":"IANA time zone name"},` +
		`"utc_offset":{"type":"string","description":"offset from UTC, e.g. +09:00"},` +
		`"weekday":{"type":"string"},` +
		`"unix":{"type":"integer","description":"seconds since 1970-01-01 UTC"}},` +
		`"required":["time","timezone","utc_offset","weekday","unix"]}`)
)

func (t *currentTime) Spec() host.ToolSpec {
	yes, no := true, false
	return host.ToolSpec{
		Name:  "current_time",
		Title: "Current time",
		Description: "Returns the current date, time and weekday in a time zone. Use it whenever the answer depends " +
			"on today's date or the time of day.",
		Prompt: "Use current_time whenever the answer depends on today's date, the day of the week or the time: " +
			"your own sense of the date is out of date. Give a time zone when the question names a place.",
		InputSchema:  currentTimeInput,
		OutputSchema: currentTimeOutput,
		Annotations:  &host.ToolAnnotations{ReadOnlyHint: &yes, OpenWorldHint: &no},
	}
}

// currentTimeResult is the structured result.
type currentTimeResult struct {
	Time      string `json:"time"`
	Timezone  string `json:"timezone"`
	UTCOffset string `json:"utc_offset"`
	Weekday   string `json:"weekday"`
	Unix      int64  `json:"unix"`
}

func (t *currentTime) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	zone, err := timezoneArg(args)
	if err != nil {
		return &host.Result{Text: "Invalid arguments: " + err.Error(), IsError: true}, nil
	}
	now := t.env.now()
	name := zone
	if zone == "" {
		name = now.Location().String()
		if now.Location() == time.Local || name == "Local" {
			name = t.localName
		}
	} else {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return &host.Result{
				Text: fmt.Sprintf("Unknown time zone %q. Use an IANA time zone name such as \"Europe/Paris\" or "+
					"\"America/New_York\", or leave timezone out for the local time.", zone),
				IsError: true,
			}, nil
		}
		now = now.In(loc)
	}
	t.env.logger.DebugContext(ctx, "builtin tool", "tool", "current_time", "timezone", name)

	_, offsetSec := now.Zone()
	offset := formatOffset(offsetSec)
	res := currentTimeResult{
		Time:      now.Format(time.RFC3339),
		Timezone:  name,
		UTCOffset: offset,
		Weekday:   now.Weekday().String(),
		Unix:      now.Unix(),
	}
	structured, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("builtin: current_time: %w", err)
	}
	return &host.Result{
		Text:       fmt.Sprintf("%s (%s, %s, UTC%s)", now.Format("2006-01-02 15:04:05 MST"), name, res.Weekday, offset),
		Structured: structured,
	}, nil
}

// timezoneArg reads the optional timezone argument. Other properties are ignored.
func timezoneArg(args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return "", nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return "", fmt.Errorf(`the arguments must be a JSON object such as {"timezone": "Asia/Tokyo"}`)
	}
	raw, ok := obj["timezone"]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var zone string
	if err := json.Unmarshal(raw, &zone); err != nil {
		return "", fmt.Errorf(`timezone must be a string such as "Asia/Tokyo", not %s`, jsonKind(raw))
	}
	return strings.TrimSpace(zone), nil
}

func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// formatOffset writes an offset from UTC in seconds as "+09:00".
func formatOffset(sec int) string {
	sign := '+'
	if sec < 0 {
		sign, sec = '-', -sec
	}
	return fmt.Sprintf("%c%02d:%02d", sign, sec/3600, sec%3600/60)
}

// localZoneName finds the IANA name of the local time zone, from TZ or the /etc/localtime link, or returns "Local".
func localZoneName() string {
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		if tz == "" {
			return "UTC"
		}
		if _, after, ok := strings.Cut(tz, "zoneinfo/"); ok {
			tz = after
		}
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, after, ok := strings.Cut(target, "zoneinfo/"); ok {
			return after
		}
	}
	return "Local"
}
