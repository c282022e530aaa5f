"""The deploy-time custom resource behind the download links' key pair (a Lambda function's code)."""
