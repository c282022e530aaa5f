"""The AWS backend: DynamoDB, S3, Step Functions and OpenSearch Serverless adapters."""
