export { minilmCatalog } from "@shoal/testing";

export const MODEL = "sentence-transformers/all-MiniLM-L6-v2";
