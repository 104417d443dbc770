"""Running ptysup on engines people already run: GitHub Actions and Kubernetes."""
