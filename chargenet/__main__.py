from chargenet.cli.main import run

run()
