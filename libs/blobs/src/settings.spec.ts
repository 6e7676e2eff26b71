import { ConfigError } from "@shoal/config";
import { describe, expect, it } from "vitest";
import { blobStoreFromEnv } from "./settings.js";

describe("blobStoreFromEnv", () => {
  it("defaults to the JetStream Object Store", () => {
    expect(blobStoreFromEnv({})).toEqual({ backend: "nats" });
    expect(blobStoreFromEnv({ SHOAL_BLOB_STORE: "" })).toEqual({ backend: "nats" });
  });

  it("reads an S3 bucket, prefix, endpoint and region", () => {
    expect(
      blobStoreFromEnv({
        SHOAL_BLOB_STORE: "s3",
        SHOAL_BLOB_S3_BUCKET: "blobs",
        SHOAL_BLOB_S3_PREFIX: "prod/",
        SHOAL_BLOB_S3_ENDPOINT: "http://minio:9000",
        SHOAL_BLOB_S3_REGION: "eu-west-1",
      }),
    ).toEqual({
      backend: "s3",
      bucket: "blobs",
      prefix: "prod/",
      endpoint: "http://minio:9000",
      region: "eu-west-1",
    });
  });

  it("takes AWS_REGION when no region of its own is set", () => {
    const settings = blobStoreFromEnv({
      SHOAL_BLOB_STORE: "s3",
      SHOAL_BLOB_S3_BUCKET: "blobs",
      AWS_REGION: "ap-south-1",
    });
    expect(settings).toMatchObject({ region: "ap-south-1", endpoint: undefined });
  });

  it.each([
    [{ SHOAL_BLOB_STORE: "gcs" }, /must be nats or s3, got "gcs"/],
    [{ SHOAL_BLOB_STORE: "s3" }, /SHOAL_BLOB_S3_BUCKET must be set/],
    [
      { SHOAL_BLOB_STORE: "s3", SHOAL_BLOB_S3_BUCKET: "b", SHOAL_BLOB_S3_ENDPOINT: "minio:9000" },
      /SHOAL_BLOB_S3_ENDPOINT must be an http\(s\) URL/,
    ],
  ])("refuses %j", (env, message) => {
    expect(() => blobStoreFromEnv(env)).toThrow(ConfigError);
    expect(() => blobStoreFromEnv(env)).toThrow(message);
  });
});
