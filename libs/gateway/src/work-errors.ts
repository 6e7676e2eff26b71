import { ErrorCode, type WorkError } from "@shoal/proto";
import {
  DeadlineExceededError,
  InternalError,
  InvalidArgumentError,
  OverloadedError,
  UnavailableError,
  type RequestError,
} from "./errors.js";

/** Turns an error reported by a worker or annotator into the domain error the client sees. */
export function fromWorkError(error: WorkError): RequestError {
  switch (error.code) {
    case ErrorCode.INVALID_ARGUMENT:
      return new InvalidArgumentError(error.message);
    case ErrorCode.NOT_FOUND:
      return new InvalidArgumentError(error.message);
    case ErrorCode.DEADLINE_EXCEEDED:
      return new DeadlineExceededError(error.message);
    case ErrorCode.RESOURCE_EXHAUSTED:
      return new OverloadedError(error.message, 1);
    case ErrorCode.UNAVAILABLE:
      return new UnavailableError(error.message);
    case ErrorCode.INTERNAL:
    case ErrorCode.UNSPECIFIED:
      return new InternalError(error.message);
  }
}
