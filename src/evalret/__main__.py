from evalret.cli import main

main()
