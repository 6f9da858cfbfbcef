"""`shell_step`: a command or a script run with a run's values, never as shell code.

`step` builds the step; `_plan` turns its command into an argv template;
`_argv` knows which programs run their arguments as code, and `_code`
refuses a value after another program's `-c` or `-e`; `_script`
compiles a script's placeholders into positional parameters; `_outcome`
judges how the command ended. `from adws.shell import shell_step` works,
and so does `from adws import shell_step`.
"""

from adws.shell.step import SHELL_MAX_OUTPUT_BYTES, SHELLS, ShellSpec, shell_step

__all__ = ["SHELLS", "SHELL_MAX_OUTPUT_BYTES", "ShellSpec", "shell_step"]
