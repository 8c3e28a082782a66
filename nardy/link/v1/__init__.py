"""Generated protocol code (make proto); do not edit."""
