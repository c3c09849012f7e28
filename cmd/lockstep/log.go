package main

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logOptions are the logging flags every long-running command takes.
type logOptions struct {
	level, format string
}

func (o *logOptions) bind(f *pflag.FlagSet) {
	f.StringVar(&o.level, "log-level", "info", "Log level: error, info, or debug (debug adds every plan's summary and inputs).")
	f.StringVar(&o.format, "log-format", "text", "Log format: text (one readable line per entry) or json.")
}

// logger is the structured logger the flags ask for.
func (o *logOptions) logger() (logr.Logger, error) {
	var level zapcore.Level
	switch o.level {
	case "error":
		level = zapcore.ErrorLevel
	case "info":
		level = zapcore.InfoLevel
	case "debug":
		level = zapcore.DebugLevel
	default:
		return logr.Logger{}, fmt.Errorf("--log-level %q: must be error, info or debug", o.level)
	}
	opts := []zap.Opts{zap.Level(level)}
	switch o.format {
	case "text":
		opts = append(opts, zap.ConsoleEncoder())
	case "json":
		opts = append(opts, zap.JSONEncoder())
	default:
		return logr.Logger{}, fmt.Errorf("--log-format %q: must be text or json", o.format)
	}
	return zap.New(opts...), nil
}
