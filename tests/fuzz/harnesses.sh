# tests/fuzz/harnesses.sh: sourced by run-fuzz.sh and limit-coverage.sh (bash).
# The harnesses, the seed paths each one replays (must agree with
# tests/fuzz/meson.build) and their libFuzzer dictionaries. Needs ROOT and
# FUZZ_DIR set.

ALL=(reply fault fixture config)

# seeds_for NAME: the seed files and directories, space-separated
seeds_for() {
	case $1 in
	reply) echo "$ROOT/tests/data/soap/replies" ;;
	fault) echo "$ROOT/tests/data/soap/replies/fault" ;;
	fixture) echo "$ROOT/tests/data/fixtures/good $ROOT/tests/data/fixtures/bad $ROOT/tests/data/fixtures/recorded $ROOT/tests/data/cli/fixtures" ;;
	config) echo "$ROOT/tests/data/config/good $ROOT/tests/data/config/bad" "$ROOT"/examples/*.yaml ;;
	esac
}

# dict_for NAME: the dictionary file
dict_for() {
	case $1 in
	config) echo "$FUZZ_DIR/dict/yaml.dict" ;;
	*) echo "$FUZZ_DIR/dict/xml.dict" ;;
	esac
}
