module kdrift.dev/kdrift

go 1.26.8

require github.com/spf13/pflag v1.0.10
