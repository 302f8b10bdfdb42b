"""The management console for operators, at `{public URL}/console/`: one more face over `chargenet.services`."""
