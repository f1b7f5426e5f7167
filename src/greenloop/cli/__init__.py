"""argparse -> Config -> one library call per subcommand -> an int exit code."""
