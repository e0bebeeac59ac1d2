from benchcast.cli import main

main()
