from gligabao.cli import main

main()
