package main

import (
	"github.com/spf13/cobra"
)

// completionShells are the shells apf completion writes a script for.
var completionShells = []string{"bash", "zsh", "fish"}

func init() { addCommand(newCompletionCmd) }

func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: `Print the script that makes SHELL complete apf's commands, flags and flag
values (output formats, log levels, --runtime-config keys, files and
directories where a flag takes one).

bash needs the bash-completion package. Load the script in the current shell
with "source <(apf completion bash)", or install it for every shell with
"apf completion bash > /etc/bash_completion.d/apf" (as root).

zsh: load it with "source <(apf completion zsh)", or write it as "_apf" into a
directory of your $fpath, with "autoload -U compinit; compinit" in ~/.zshrc.

fish: "apf completion fish > ~/.config/fish/completions/apf.fish".`,
		Example: `  # Load completion into the current bash shell
  source <(apf completion bash)

  # Install it for zsh
  apf completion zsh > "${fpath[1]}/_apf"

  # Install it for fish
  apf completion fish > ~/.config/fish/completions/apf.fish`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError("give one shell: bash, zsh or fish")
			}
			switch args[0] {
			case "bash", "zsh", "fish":
				return nil
			}
			return usageError("unsupported shell %q: must be one of: bash, zsh, fish", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(out, true)
			case "zsh":
				err = root.GenZshCompletion(out)
			case "fish":
				err = root.GenFishCompletion(out, true)
			}
			if err != nil {
				return failure(err)
			}
			return nil
		},
	}
}
