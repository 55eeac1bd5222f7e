from vllm_lint.entry import main

if __name__ == "__main__":
    main()
