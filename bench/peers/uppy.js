// What an app ships for S3 uploads that survive a reload with Uppy.
export { default as Uppy } from "@uppy/core";
export { default as AwsS3 } from "@uppy/aws-s3";
export { default as GoldenRetriever } from "@uppy/golden-retriever";
