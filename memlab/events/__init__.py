"""Event memory: which events are kept, how they become units, and the memory that stores and searches them."""
