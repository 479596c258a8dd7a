from cachecast.cli import main

main()
