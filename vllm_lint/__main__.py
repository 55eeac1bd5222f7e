from vllm_lint.cli.entry import main

if __name__ == "__main__":
    main()
