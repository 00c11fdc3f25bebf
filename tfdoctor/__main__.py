from tfdoctor.console import main

main()
